"""``POST /v1/chat``: a user message, or a person's decision on a pending consent."""

from __future__ import annotations

from copy import deepcopy
from typing import Annotated, Any, Literal, Self, cast

from pydantic import ConfigDict, Field, JsonValue, PrivateAttr, model_validator
from pydantic.config import JsonDict

from consentry.schemas.approvals import DecisionFields
from consentry.schemas.requests import RequestModel

__all__ = ["Breakpoints", "ChatRequest", "ConsentPolicy", "ResumeDecision"]

ConsentPolicy = Literal["ask", "auto_approve", "auto_reject"]

Breakpoints = Literal["*"] | tuple[str, ...] | None
"""LangGraph's static breakpoints: every node (``"*"``), these nodes, or none."""


class ResumeDecision(DecisionFields):
    """A person's answer to a ``consent`` event."""

    approval_id: str = Field(min_length=1, max_length=64, description="From the consent event.")


def _one_input(schema: JsonDict) -> None:
    """The JSON Schema of ``ChatRequest`` says what its ``_exactly_one_input`` checks: a
    ``message``, an ``input``, or a ``resume`` with the ``thread_id`` of its consents."""
    resume = cast("dict[str, Any]", schema["properties"])["resume"]
    decisions = [member for member in resume["anyOf"] if member != {"type": "null"}]
    schema["oneOf"] = [
        {
            "required": ["message"],
            "properties": {
                "message": {"type": "string"},
                "input": {"type": "null"},
                "resume": {"type": "null"},
            },
        },
        {
            "required": ["input"],
            "properties": {
                "message": {"type": "null"},
                "input": {"type": "object"},
                "resume": {"type": "null"},
            },
        },
        {
            "required": ["resume", "thread_id"],
            "properties": {
                "message": {"type": "null"},
                "input": {"type": "null"},
                "resume": {"anyOf": deepcopy(decisions)},
                "thread_id": {"type": "string"},
            },
        },
    ]


class ChatRequest(RequestModel):
    """Start a run: exactly one of ``message``, ``input`` or ``resume``."""

    # Python's regex engine for the pattern of `message`: blank is what `str.isspace` says, as
    # Python clients of the document (schemathesis) read `\S`. Rust's engine, pydantic's default,
    # takes fewer characters for spaces (U+001C).
    model_config = ConfigDict(
        extra="forbid", regex_engine="python-re", json_schema_extra=_one_input
    )

    thread_id: str | None = Field(
        default=None, min_length=1, max_length=36, description="Omit to start a new thread."
    )
    graph: str = Field(default="tutor", min_length=1, max_length=64)
    project_id: str | None = Field(default=None, min_length=1, max_length=36)
    note_id: str | None = Field(
        default=None, min_length=1, max_length=36, description="The note the user is looking at."
    )
    message: str | None = Field(
        default=None,
        pattern=r"\S",
        description='Not blank. Shorthand for the input `{"messages": [this user message]}`.',
    )
    input: dict[str, JsonValue] | None = Field(
        default=None,
        description="The graph's own input, any JSON object, checked against the graph's input "
        "schema (`GET /v1/graphs`; 422 `invalid_input` naming the field).",
    )
    resume: (
        ResumeDecision | Annotated[list[ResumeDecision], Field(min_length=1, max_length=50)] | None
    ) = Field(
        default=None,
        description="A decision on a pending consent, or a list of decisions on several pending "
        "consents of the thread (parallel branches), applied together; each consent once "
        "(422 `duplicate_decision`).",
    )
    context: dict[str, JsonValue] | None = Field(
        default=None,
        description="The graph's own runtime context (LangGraph's `Runtime.context`), checked "
        "against its `context_schema` (422 `invalid_context` naming the field; absent fields "
        "take their defaults). Kept with the thread: its later runs sent without one (a "
        "decision from the inbox, an expiry) get it.",
    )
    configurable: dict[str, JsonValue] | None = Field(
        default=None,
        description='Values for the graph\'s `config["configurable"]`. `thread_id`, '
        "`checkpoint_id`, `checkpoint_ns`, `checkpoint_map` and keys that start with `__` are "
        "the server's (422 `invalid_config`). Kept with the thread, as `context` is.",
    )
    consent_policy: ConsentPolicy | None = Field(
        default=None,
        description="For a new thread: `ask` (default: a person decides every consent), "
        "`auto_approve` (decided by `policy`), `auto_reject` (dry run: nothing applied). "
        "Consents of destructive kinds always ask.",
    )
    on_pending_consent: Literal["fail", "reject"] = Field(
        default="fail",
        description="A message while a consent is pending: `fail` (409 `consent_pending`) or "
        "`reject` (reject the pending consents first, in the same transaction).",
    )

    _assistant: tuple[str | None] | None = PrivateAttr(default=None)
    """Set by the LangGraph SDK face (never sent by a client): the owner's assistant the run is
    on, or None for a graph's own."""

    def on_assistant(self, assistant_id: str | None) -> Self:
        """This request, as a run on ``assistant_id`` (the thread names it from its claim)."""
        self._assistant = (assistant_id,)
        return self

    _fork: str | None = PrivateAttr(default=None)
    """Set by the LangGraph SDK face (never sent by a client): an older checkpoint of the thread
    this run's ``input`` branches from (a fork; None: the thread's newest)."""

    def forked_from(self, checkpoint_id: str | None) -> Self:
        """This request, as a run from ``checkpoint_id`` of its thread (None: its head)."""
        self._fork = checkpoint_id
        return self

    @property
    def fork_point(self) -> str | None:
        return self._fork

    _breakpoints: tuple[Breakpoints, Breakpoints] = PrivateAttr(default=(None, None))
    """Set by the LangGraph SDK face: the nodes the run stops before and after
    (``interrupt_before`` / ``interrupt_after``, ``"*"`` for every node; LangGraph's static
    breakpoints). A run with no input goes on from where one stopped."""

    def at_breakpoints(self, before: Breakpoints, after: Breakpoints) -> Self:
        """This request, as a run that stops before ``before`` and after ``after``."""
        self._breakpoints = (before, after)
        return self

    @property
    def breakpoints(self) -> tuple[Breakpoints, Breakpoints]:
        return self._breakpoints

    _webhook: tuple[str, dict[str, Any] | None] | None = PrivateAttr(default=None)
    """Set by the LangGraph SDK face: the URL the run posts its record to when it ends (checked
    against the allow-list), with the client's metadata on the run."""

    def posting_to(self, webhook: str | None, metadata: dict[str, Any] | None) -> Self:
        """This request, as a run whose end is posted to ``webhook`` (None: nowhere)."""
        self._webhook = None if webhook is None else (webhook, metadata)
        return self

    @property
    def webhook(self) -> tuple[str, dict[str, Any] | None] | None:
        return self._webhook

    _continues: bool = PrivateAttr(default=False)
    """Set by the LangGraph SDK face (a run with neither ``input`` nor ``command``): the graph
    goes on from the thread's newest checkpoint with no new input (``input`` is ``{}``)."""

    def continuing(self) -> Self:
        """This request, as a run that continues the thread's graph with no input."""
        self._continues = True
        return self

    @property
    def continues(self) -> bool:
        return self._continues

    @property
    def assistant_named(self) -> bool:
        return self._assistant is not None

    @property
    def assistant_id(self) -> str | None:
        return self._assistant[0] if self._assistant is not None else None

    @model_validator(mode="after")
    def _exactly_one_input(self) -> Self:
        given = [self.message, self.input, self.resume]
        if sum(item is not None for item in given) != 1:
            raise ValueError("send exactly one of `message`, `input` or `resume`")
        if self.resume is not None and self.thread_id is None:
            raise ValueError("a `resume` needs the `thread_id` of its consent")
        return self

    @property
    def decisions(self) -> list[ResumeDecision]:
        if self.resume is None:
            return []
        return self.resume if isinstance(self.resume, list) else [self.resume]
