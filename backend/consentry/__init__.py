"""Consentry's server: a FastAPI app that serves LangGraph graphs over a typed SSE chat API."""
