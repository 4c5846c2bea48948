"""A request FastAPI could not validate, as the one error a person reads.

FastAPI hands over pydantic's errors for the whole body; most are answered as they are (422
``request_invalid``, ``details.errors`` says where). The common ones read as a sentence, with a
code of their own, checked in this order:

- text that no database stores: 422 ``unstorable_text`` (``schemas.requests``);
- a body sent with a content type that is not JSON (or none): 415 ``unsupported_media_type``
  (FastAPI does not parse it, so every field would look missing);
- a body that is not JSON: 422 ``malformed_json``;
- a decision that is not one of the decisions: 422 ``unknown_decision``, one error naming them
  (a ``resume`` may be a decision or a list of them, and pydantic reports both readings);
- an empty or blank ``message``: 422 ``empty_message``.
"""

from __future__ import annotations

from typing import Any, get_args

from fastapi.exceptions import RequestValidationError

from consentry.errors import ConsentryError, InvalidRequestError, UnsupportedMediaTypeError
from consentry.schemas.requests import UNSTORABLE_TEXT
from consentry_graphs.wire_types import Decision

__all__ = ["is_json_media_type", "request_error"]

DECISIONS: tuple[str, ...] = get_args(Decision)


def request_error(exc: RequestValidationError, *, content_type: str | None) -> ConsentryError:
    """The error a client gets for a request that failed validation."""
    errors = [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
        for e in exc.errors()
    ]
    unstorable = [e for e in errors if e["type"] == UNSTORABLE_TEXT]
    if unstorable:
        return InvalidRequestError(
            unstorable[0]["msg"], code=UNSTORABLE_TEXT, details={"errors": unstorable}
        )
    if isinstance(exc.body, bytes) and exc.body and not is_json_media_type(content_type):
        return UnsupportedMediaTypeError(
            "Send JSON with Content-Type: application/json.",
            details={"content_type": content_type},
        )
    if any(e["type"] == "json_invalid" for e in errors):
        return InvalidRequestError(
            "The request body is not valid JSON.", code="malformed_json", details={"errors": errors}
        )
    decision = next((e for e in errors if _is_unknown_decision(e)), None)
    if decision is not None:
        return _unknown_decision(decision, exc.errors())
    if len(errors) == 1 and _is_empty_message(errors[0]):
        message = "Write a message first."
        return InvalidRequestError(
            message,
            code="empty_message",
            details={"errors": [{**errors[0], "msg": message}]},
        )
    return InvalidRequestError(
        "The request does not match the schema.", code="request_invalid", details={"errors": errors}
    )


def is_json_media_type(content_type: str | None) -> bool:
    """``application/json`` or ``application/*+json``, whatever its parameters."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


def _is_unknown_decision(error: dict[str, Any]) -> bool:
    loc = error["loc"]
    return error["type"] == "literal_error" and bool(loc) and loc[-1] == "decision"


def _unknown_decision(error: dict[str, Any], raw: Any) -> InvalidRequestError:
    """One error at the decision's place (the union's branch names taken out of ``loc``)."""
    loc = [part for part in error["loc"] if not _is_branch_name(part)]
    given = next(
        (e.get("input") for e in raw if e.get("type") == "literal_error" and e.get("input")),
        None,
    )
    allowed = ", ".join(DECISIONS[:-1]) + f" or {DECISIONS[-1]}"
    short = isinstance(given, str) and len(given) <= 40
    shown = repr(given) if short or isinstance(given, int | float) else "this one"
    message = f"Unknown decision {shown}: a decision is {allowed}."
    return InvalidRequestError(
        message,
        code="unknown_decision",
        details={
            "allowed_decisions": list(DECISIONS),
            "errors": [{"loc": loc, "msg": message, "type": "literal_error"}],
        },
    )


def _is_branch_name(part: object) -> bool:
    """pydantic names a union's branch in ``loc`` (``function-after[…]``, ``list[…]``)."""
    return isinstance(part, str) and "[" in part and part.endswith("]")


def _is_empty_message(error: dict[str, Any]) -> bool:
    return error["loc"] == ["body", "message"] and error["type"] in (
        "string_pattern_mismatch",
        "string_too_short",
    )
