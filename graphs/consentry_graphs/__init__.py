"""Plain LangGraph graphs served by Consentry.

Nothing here imports ``backend``: every graph is runnable and testable on its own, and receives
its services (the notes store) through LangGraph's runtime context.
"""
