"""What a LangGraph SDK run request is refused for by its shape alone, before anything is
stored or looked up, and whether it goes through its thread's run queue."""

from __future__ import annotations

from consentry.errors import ConflictError, InvalidRequestError, NotFoundError
from consentry.schemas.sdk_runs import RunCreate

__all__ = ["check_body", "goes_through_queue", "no_client_to_watch", "refuse_without_thread"]


def check_body(body: RunCreate) -> None:
    """What is refused before anything is stored."""
    unserved = sorted(set(body.config or {}) - {"configurable"})
    if unserved:
        raise InvalidRequestError(
            "Of a run's `config` only `configurable` is served (Consentry bounds runs with "
            "its own limits and callbacks).",
            code="unsupported_field",
            details={"fields": [f"config.{key}" for key in unserved]},
        )
    if body.command is not None and body.input:
        raise InvalidRequestError(
            "Send one of `input` or `command` (beside a `command`, `input` may be empty; "
            "with neither, the graph goes on from the thread's newest checkpoint).",
            code="invalid_input",
        )


def refuse_without_thread(body: RunCreate) -> None:
    """What only a thread takes: a ``command``, going on with no ``input``, a ``checkpoint``."""
    if body.command is not None:
        raise ConflictError("A `command` resumes a thread: name it.", code="no_pending_consent")
    if body.input is None:
        raise ConflictError(
            "A run with no `input` goes on with a thread's graph: name the thread.",
            code="nothing_to_continue",
        )
    if body.from_checkpoint is not None:
        raise NotFoundError(
            "A new thread has no checkpoint to start from.",
            code="checkpoint_not_found",
            details={"checkpoint_id": body.from_checkpoint},
        )


def no_client_to_watch() -> InvalidRequestError:
    return InvalidRequestError(
        '`on_disconnect: "cancel"` needs a client to watch: `runs.stream` or `runs.wait`.',
        code="unsupported_field",
        details={"fields": ["on_disconnect"]},
    )


def goes_through_queue(body: RunCreate, thread_id: str | None) -> bool:
    """Whether the run goes through its thread's queue (a new thread has nothing to wait for).
    ``enqueue`` by default is for what a person sends: a decision (``command``) is answered at
    once unless the client asked to queue it, so racing answers learn at once who won (409
    ``already_decided`` naming it) instead of failing later in the queue."""
    if thread_id is None:
        return False
    if body.after_seconds:  # (due later: it waits in the queue whatever the strategy)
        return True
    if body.multitask_strategy == "reject":
        return False
    asked = "multitask_strategy" in body.model_fields_set
    return body.multitask_strategy in ("interrupt", "rollback") or body.command is None or asked
