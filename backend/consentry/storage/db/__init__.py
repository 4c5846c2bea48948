"""The driver layer: how Consentry talks to SQLite and PostgreSQL, under every repository and
the checkpointer. Nothing here knows a table's meaning.

- ``database``: :class:`~consentry.storage.db.database.Database` (the engine, read and write
  transactions, the lease heartbeat's own connection, migrations at start-up), running a
  statement (``execute``, ``execute_unread``, ``notify_at_commit``), the drivers' errors told
  apart.
- ``direct``: the hot path's statements run on the driver directly (compiled once by
  SQLAlchemy), and PostgreSQL's deferred ``BEGIN`` and unread statements sent with the next one.
- ``sqlite_connection`` and ``sqlite_thread``: SQLite's connections; the work that must not
  hold the event loop up runs on each connection's own thread.
- ``postgres_transactions``: a PostgreSQL transaction on SQLAlchemy's async engine.
- ``idle_checks``: a pooled connection idle long enough is checked before use, not each time.
- ``dialect``: what the two databases spell differently (``INSERT … ON CONFLICT``).
- ``process_lock``: one server per SQLite file (``serving_lock``).
- ``database_check``: a database setting that cannot work is refused in one line at start-up.
"""
