"""Storage: the database (SQLite, or PostgreSQL for several replicas) behind three kinds of
module: the driver layer (``db``), the tables and their repositories (``tables``,
``migrations``, and one module per table or concern: ``threads``, ``runs``, ``events``,
``approvals``, ``audit``, …), and LangGraph's checkpointer (``checkpoints``)."""
