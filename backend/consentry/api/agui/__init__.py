"""AG-UI's face on the run service: ``POST /v1/agui/{graph}`` (``docs/ag-ui.md``)."""

from consentry.api.agui.routes import router

__all__ = ["router"]
