"""Settings, read once from the environment (prefix ``CONSENTRY_``) and validated at start-up.

Public: :class:`Settings`. Private: ``_settings`` holds it (what is served, where state lives,
models, retention, observability, and the combinations refused at start-up), ``_limits`` the
limits it inherits (sizes, HTTP timeouts, rates, streams, active runs)."""

from __future__ import annotations

from consentry.settings._settings import Settings

__all__ = ["Settings"]
