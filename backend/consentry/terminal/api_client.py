"""The public HTTP API, typed: requests out, wire models (``consentry.schemas``) back.

Every refusal becomes an :class:`~consentry.terminal.errors.ApiError` (the ``{"error": …}`` body),
every connection failure a :class:`~consentry.terminal.errors.ServerUnreachableError`. A run's
events come from :class:`~consentry.terminal.run_stream.RunStream`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, SecretStr, ValidationError

from consentry.schemas.approvals import Approval, ApprovalList, DecisionAccepted, DecisionRequest
from consentry.schemas.chat import ChatRequest
from consentry.schemas.consent_kinds import ConsentKindDetail, ConsentKindList
from consentry.schemas.errors import ErrorBody
from consentry.schemas.notes import Note, NoteList, Project, ProjectList
from consentry.schemas.threads import ThreadDetail, ThreadList, ThreadSummary
from consentry.terminal.errors import (
    ApiError,
    InvalidInputError,
    ServerUnreachableError,
    UnexpectedResponseError,
)
from consentry.terminal.run_stream import RunStream

__all__ = ["ConsentryClient", "build_request", "new_idempotency_key"]

TIMEOUT = httpx.Timeout(60.0, connect=5.0, pool=5.0)
"""Reads wait at most 60 s: a stream sends a keep-alive at least every 15 s."""
DECISION_ATTEMPTS = 3
"""A decision whose answer was lost is sent again with the same ``Idempotency-Key``."""
_MAYBE_SENT = (httpx.ReadError, httpx.ReadTimeout, httpx.RemoteProtocolError, httpx.WriteError)
ModelT = TypeVar("ModelT", bound=BaseModel)


def build_request(model: type[ModelT], fields: dict[str, Any]) -> ModelT:
    """A request body from what the person gave, checked by its wire model before it is sent."""
    try:
        return model.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise InvalidInputError(f"{where}: {error['msg']}" if where else error["msg"]) from None


def new_idempotency_key() -> str:
    """A fresh key per decision: the server runs a key's request once, however often it comes."""
    return str(uuid.uuid4())


class ConsentryClient:
    """A Consentry server at ``base_url``; ``api_key`` goes as ``Authorization: Bearer``."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: SecretStr | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key.get_secret_value()}"} if api_key else {}
        self.base_url = base_url
        self._http = httpx.Client(
            base_url=base_url, headers=headers, timeout=TIMEOUT, transport=transport
        )

    def __enter__(self) -> ConsentryClient:
        return self

    def __exit__(self, *_: object) -> None:
        self._http.close()

    def check_access(self) -> None:
        """Fail now, not at the first message, when the server is down or refuses the key."""
        self._send("GET", "/v1/threads", params={"limit": 1})

    def thread(self, thread_id: str) -> ThreadDetail:
        return _parse(self._send("GET", f"/v1/threads/{_segment(thread_id)}"), ThreadDetail)

    def projects(self) -> list[Project]:
        return _parse(self._send("GET", "/v1/projects"), ProjectList).projects

    def notes(self, project_id: str) -> list[Note]:
        path = f"/v1/projects/{_segment(project_id)}/notes"
        return _parse(self._send("GET", path), NoteList).notes

    def note(self, note_id: str) -> Note:
        return _parse(self._send("GET", f"/v1/notes/{_segment(note_id)}"), Note)

    def note_threads(self, note_id: str) -> list[ThreadSummary]:
        """The note's conversations (``GET /v1/threads?note_id=``), the most recent first (the
        server's first page: 100)."""
        params: dict[str, str | int] = {"note_id": note_id}
        return _parse(self._send("GET", "/v1/threads", params=params), ThreadList).threads

    def approval(self, approval_id: str) -> Approval:
        return _parse(self._send("GET", f"/v1/approvals/{_segment(approval_id)}"), Approval)

    def approvals(self, *, status: str | None = None) -> Iterator[Approval]:
        """Every approval (of ``status``), newest first, following ``next_cursor``."""
        params: dict[str, str | int] = {"limit": 200} | ({"status": status} if status else {})
        while True:
            page = _parse(self._send("GET", "/v1/approvals", params=params), ApprovalList)
            yield from page.approvals
            if page.next_cursor is None:
                return
            params["cursor"] = page.next_cursor

    def consent_kinds(self) -> list[ConsentKindDetail]:
        return _parse(self._send("GET", "/v1/consent-kinds"), ConsentKindList).consent_kinds

    def decide(self, approval_id: str, decision: DecisionRequest) -> DecisionAccepted:
        """``POST /v1/approvals/{id}/decision``; the graph resumes in the background."""
        path = f"/v1/approvals/{_segment(approval_id)}/decision"
        body = decision.model_dump(mode="json", exclude_none=True)
        if decision.decision == "answer":
            body["value"] = decision.value  # any JSON, null too
        headers = {"Idempotency-Key": new_idempotency_key()}
        for attempt in range(1, DECISION_ATTEMPTS + 1):
            try:
                return _parse(
                    self._send("POST", path, json=body, headers=headers), DecisionAccepted
                )
            except ServerUnreachableError as exc:
                if attempt == DECISION_ATTEMPTS or not isinstance(exc.__cause__, _MAYBE_SENT):
                    raise
                time.sleep(0.5 * attempt)  # the answer was lost: ask again, same key
        raise AssertionError("unreachable")  # pragma: no cover

    def run(self, request: ChatRequest, *, idempotency_key: str | None = None) -> RunStream:
        """``POST /v1/chat``: the run's events, to its ``final``."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        body = request.model_dump(mode="json", exclude_none=True, exclude_unset=True)
        answers = [r for r in request.decisions if r.decision == "answer"]
        if answers:  # an answer is any JSON, null too
            body["resume"] = [
                {**r.model_dump(mode="json", exclude_none=True), "value": r.value}
                if r.decision == "answer"
                else r.model_dump(mode="json", exclude_none=True)
                for r in request.decisions
            ]
            if not isinstance(request.resume, list):
                body["resume"] = body["resume"][0]
        return RunStream(
            self, self._http.build_request("POST", "/v1/chat", json=body, headers=headers)
        )

    def open_stream(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return its response unread (an SSE stream), or raise."""
        try:
            response = self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if response.is_error:
            try:
                response.read()
            except httpx.TransportError as exc:
                raise _unreachable(self.base_url, exc) from exc
            finally:
                response.close()
            raise _api_error(response)
        return response

    def rejoin_request(self, thread_id: str, last_event_id: int | None) -> httpx.Request:
        """The thread's stream after ``last_event_id`` (from its start when None)."""
        headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
        path = f"/v1/threads/{_segment(thread_id)}/stream"
        return self._http.build_request("GET", path, headers=headers)

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str | int] | None = None,
        json: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        try:
            response = self._http.request(method, path, params=params, json=json, headers=headers)
        except httpx.TransportError as exc:
            raise _unreachable(self.base_url, exc) from exc
        if response.is_error:
            raise _api_error(response)
        return response


def _parse(response: httpx.Response, model: type[ModelT]) -> ModelT:
    try:
        return model.model_validate_json(response.content)
    except ValidationError:
        raise UnexpectedResponseError(
            f"{response.request.method} {response.request.url.path}: "
            "the answer is not Consentry's protocol (is this a Consentry server?)"
        ) from None


def _api_error(response: httpx.Response) -> ApiError:
    try:
        error = ErrorBody.model_validate_json(response.content).error
    except ValidationError:
        return ApiError(
            response.status_code,
            code="http_error",
            message=f"HTTP {response.status_code} from {response.request.url}",
        )
    return ApiError(
        response.status_code, code=error.code, message=error.message, details=error.details
    )


def _unreachable(base_url: str, exc: httpx.TransportError) -> ServerUnreachableError:
    if isinstance(exc, httpx.TimeoutException):
        return ServerUnreachableError(f"the Consentry server at {base_url} did not answer in time")
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.ConnectError):
        return ServerUnreachableError(f"cannot reach the Consentry server at {base_url}: {reason}")
    return ServerUnreachableError(f"lost the connection to {base_url}: {reason}")


def _segment(value: str) -> str:
    """An id typed by a person, as one path segment (a `/` or `?` in it stays in it)."""
    return quote(value, safe="")
