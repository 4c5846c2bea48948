"""Storage: one database (a SQLite file) for the app tables and LangGraph's checkpoints."""
