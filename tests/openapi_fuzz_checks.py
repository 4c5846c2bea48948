"""Consentry's own checks for schemathesis, run beside its built-in ones.

Registered on import: tests/integration/test_openapi_fuzz.py imports this module, and the release
check's run against a live server loads it with ``SCHEMATHESIS_HOOKS=tests.openapi_fuzz_checks``
(docs/release-checks.md).
"""

from __future__ import annotations

import json

import schemathesis
from schemathesis import Case, CheckContext, GenerationMode, Response

__all__ = ["request_models_accept_what_the_document_accepts", "streams_end_with_final"]

REQUEST_MODEL_CODES = frozenset(
    {"request_invalid", "malformed_json", "empty_message", "unknown_decision"}
)
"""The codes of a 422 that says the request does not match the request models
(backend/consentry/api/http/request_errors.py)."""


@schemathesis.check
def request_models_accept_what_the_document_accepts(
    ctx: CheckContext, response: Response, case: Case
) -> bool | None:
    """A request the OpenAPI document accepts is not refused as one that does not match the
    schema: the request models' validators demand nothing the document does not say.

    Other 422 codes answer well-formed requests that break a rule of the product
    (``unknown_graph``, ``message_too_long``...), which the document cannot say."""
    if case.meta is None or case.meta.generation.mode is not GenerationMode.POSITIVE:
        return None
    if response.status_code != 422:
        return None
    error = json.loads(response.content).get("error", {})
    assert error.get("code") not in REQUEST_MODEL_CODES, (
        f"A request the OpenAPI document accepts was refused with {error.get('code')}: "
        f"{error.get('message')} {error.get('details')}"
    )
    return True


APPROVALS_STREAM = "/v1/approvals/stream"
"""The one stream that never ends by itself: the fuzz reads its first frame (``ready``, see
tests/openapi_fuzz.toml) and it is checked against the document like any response."""


@schemathesis.check
def streams_end_with_final(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """A run's event stream ends on its own (within the request timeout), and its last event, if
    it has any, is the run's ``final``."""
    content_type = (response.headers.get("content-type") or [""])[0]
    if response.status_code != 200 or not content_type.startswith("text/event-stream"):
        return None
    if case.operation.path == APPROVALS_STREAM:
        return None
    assert not response.stream_cut_short, "The stream was still open at the request timeout"
    events = [
        line.removeprefix("event:").strip()
        for line in response.text.splitlines()
        if line.startswith("event:")
    ]
    assert not events or events[-1] == "final", f"The stream ended with {events[-1]!r}"
    return True
