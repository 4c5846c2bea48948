"""The LangGraph SDK's API (``langgraph-sdk``, ``useStream``): a second face on Consentry's run
service, with the same records behind it (``docs/langgraph-sdk.md``)."""

from consentry.api.sdk._queue import open_run_queue, scheduling_crons

__all__ = ["open_run_queue", "scheduling_crons"]
