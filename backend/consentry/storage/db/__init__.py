"""The driver layer: how Consentry talks to SQLite and PostgreSQL, under every repository and
the checkpointer. Nothing here knows a table's meaning.

- ``database``: :class:`~consentry.storage.db.database.Database` (the pools, read and write
  transactions, the lease heartbeat's own connection, migrations at start-up), running a
  statement (``execute``, ``execute_unread``, ``notify_at_commit``), the drivers' errors told
  apart.
- ``direct``: statements run on the driver directly (the hot path's compiled once by
  SQLAlchemy), several in one message on PostgreSQL.
- ``sqlite_connection`` and ``sqlite_thread``: SQLite's connections; the work that must not
  hold the event loop up runs on each connection's own thread.
- ``postgres_connection`` and ``postgres_pool``: PostgreSQL's transactions, their ``BEGIN`` and
  unread statements sent with the next one, on a small pool of psycopg connections.
- ``idle_checks``: a pooled connection idle long enough is checked before use, not each time.
- ``dialect``: what the two databases spell differently (``INSERT … ON CONFLICT``).
- ``process_lock``: one server per SQLite file (``serving_lock``).
- ``database_check``: a database setting that cannot work is refused in one line at start-up.
"""
