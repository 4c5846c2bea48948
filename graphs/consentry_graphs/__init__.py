"""Plain LangGraph graphs served by Consentry.

Nothing here imports ``backend``: every graph is runnable and testable on its own, and receives
its services (the notes store) through ``consentry_graphs.services`` (``graph_services()``),
leaving LangGraph's runtime context to each graph's own ``context_schema``.
"""
