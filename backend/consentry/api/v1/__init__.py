"""Consentry's own face, ``/v1``: one module per resource (chat, threads, approvals and their
feed, consent kinds, graphs, notes, the caller). Each parses, authorizes, calls the runtime and
renders; the run service is reached through ``api.run_requests``."""
