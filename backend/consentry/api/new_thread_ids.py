"""The id a client chooses for a thread its first run creates (the LangGraph SDK's
``if_not_exists="create"``, AG-UI's ``threadId``): a UUID, as every thread's id is."""

from __future__ import annotations

from uuid import UUID

from consentry.errors import InvalidRequestError

__all__ = ["check_uuid"]


def check_uuid(thread_id: str) -> None:
    try:
        UUID(thread_id)
    except ValueError:
        raise InvalidRequestError(
            "A thread created by its first run needs a UUID for its id.",
            code="invalid_thread_id",
            details={"thread_id": thread_id},
        ) from None
