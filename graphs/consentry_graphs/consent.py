"""The consent kit: what an interrupt node asks, and what the node gets back.

A consent node *only asks*: it calls :meth:`ConsentKind.ask`, which raises LangGraph's
``interrupt()`` with a :class:`ConsentRequest`. The server turns that into a ``consent`` event and
an approval record, validates a person's decision against the kind (allowed decisions, the edit
schema) *before* it resumes the graph, and resumes with a :class:`ConsentDecision`. ``ask`` then
returns a :class:`TypedDecision` whose ``edit`` is already an instance of the kind's edit model.

LangGraph re-runs the interrupted node from its first line on resume, so everything before
``ask`` must be pure and cheap; the effect happens in a later node, once per approval id: see
:func:`run_effect_once`.

    NOTE_DELETE = ConsentKind(
        name="note_delete",
        proposal_model=NoteDeleteProposal,
        edit_model=None,                       # approve or reject only
        allowed_decisions=("approve", "reject"),
        always_ask=True,                       # destructive: no policy decides it
    )
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, Literal, Protocol, TypeVar

from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, Field

from consentry_graphs.review_shape import ActionRequest, ReviewConfig
from consentry_graphs.wire_types import Decision

__all__ = [
    "ConsentDecision",
    "ConsentKind",
    "ConsentNotGrantedError",
    "ConsentRequest",
    "Decision",
    "EffectLedger",
    "InMemoryEffectLedger",
    "Outcome",
    "TypedDecision",
    "proposal_hash",
    "run_effect_once",
]


Outcome = Literal["approve", "edit", "reject", "answer", "respond", "expire"]
"""What a consent node receives: a decision, or ``expire`` when nobody decided in time.
(``answer`` and ``respond`` are how the server records a reply to a raw ``interrupt()`` and to a
reviewed tool call; a kit's node never receives them: they are not among a kind's
``allowed_decisions``.)"""

ProposalT = TypeVar("ProposalT", bound=BaseModel)
EditT = TypeVar("EditT", bound=BaseModel)


class ConsentRequest(BaseModel):
    """The value a consent node passes to ``interrupt()``."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="What is being asked, e.g. `note_edit`; selects the schemas.")
    title: str = Field(description="One line a person reads first.")
    proposal: dict[str, Any] = Field(description="The structured proposal of this kind.")
    allowed_decisions: list[Decision] = Field(min_length=1)
    ttl_seconds: int | None = Field(
        default=None, gt=0, description="How long the request stays open; server default if None."
    )
    always_ask: bool = Field(
        default=False, description="A person must decide, whatever the thread's policy says."
    )
    action_requests: list[ActionRequest] = Field(
        default_factory=list,
        description="The same request in LangChain's human-in-the-loop shape (`review_shape`).",
    )
    review_configs: list[ReviewConfig] = Field(default_factory=list)


class ConsentDecision(BaseModel):
    """The value the server resumes a consent node with, after validating it."""

    model_config = ConfigDict(extra="forbid")

    approval_id: str
    decision: Outcome
    edited: dict[str, Any] | None = None
    value: Any = Field(default=None, description="With `answer`: the value given.")
    comment: str | None = None
    decided_by: str = Field(description="`tenant/user`, `policy` or `system`.")


@dataclass(frozen=True)
class TypedDecision(Generic[EditT]):
    """A decision as a consent node sees it: the edit already parsed into the kind's model."""

    approval_id: str
    decision: Outcome
    edit: EditT | None
    comment: str | None
    decided_by: str

    @property
    def approved(self) -> bool:
        """True for ``approve`` and ``edit``: the effect may run."""
        return self.decision in ("approve", "edit")

    def to_state(self) -> dict[str, Any]:
        """JSON for the graph state (restore it with :meth:`ConsentKind.restore`)."""
        return {
            "approval_id": self.approval_id,
            "decision": self.decision,
            "edited": self.edit.model_dump(mode="json") if self.edit is not None else None,
            "comment": self.comment,
            "decided_by": self.decided_by,
        }


def proposal_hash(proposal: dict[str, Any]) -> str:
    """A stable fingerprint of a proposal (sha256 of its canonical JSON), kept in the audit."""
    canonical = json.dumps(proposal, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class ConsentKind(Generic[ProposalT, EditT]):
    """One kind of consent a graph can ask for: its proposal and edit schemas and its rules."""

    name: str
    proposal_model: type[ProposalT]
    edit_model: type[EditT] | None
    allowed_decisions: tuple[Decision, ...] = field(default=("approve", "edit", "reject"))
    ttl_seconds: int | None = None
    """How long a request stays open; None uses the server's default."""
    always_ask: bool = False
    """Destructive kinds: a thread's auto-approve or auto-reject policy never decides them."""
    description: str = ""
    action_args: Callable[[ProposalT], dict[str, Any]] | None = None
    """The proposal as the reviewed action's ``args`` (``review_shape``), named as the edit
    model's fields. None: the proposal's fields the edit model has (all of them for a kind
    that takes no edits)."""
    action_description: Callable[[ProposalT], str] | None = None
    """What the reviewed action's ``description`` adds after the title (a diff, say)."""

    def __post_init__(self) -> None:
        if ("edit" in self.allowed_decisions) != (self.edit_model is not None):
            raise ValueError(f"consent kind {self.name!r}: `edit` needs an edit_model, and back")

    def ask(self, *, title: str, proposal: ProposalT) -> TypedDecision[EditT]:
        """Pause the graph until the consent is decided (or expires); return the decision."""
        request = ConsentRequest(
            kind=self.name,
            title=title,
            proposal=proposal.model_dump(mode="json"),
            allowed_decisions=list(self.allowed_decisions),
            ttl_seconds=self.ttl_seconds,
            always_ask=self.always_ask,
            action_requests=[self._action(title, proposal)],
            review_configs=[
                ReviewConfig(
                    action_name=self.name,
                    allowed_decisions=list(self.allowed_decisions),
                    args_schema=self._edit_schema,
                )
            ],
        )
        return self.restore(interrupt(request.model_dump(mode="json")))

    @cached_property
    def _edit_schema(self) -> dict[str, Any] | None:
        """The edit model's JSON Schema, built once (the review's ``args_schema``)."""
        return self.edit_model.model_json_schema() if self.edit_model else None

    def _action(self, title: str, proposal: ProposalT) -> ActionRequest:
        """The request as one reviewed action (``review_shape``)."""
        if self.action_args is not None:
            args = self.action_args(proposal)
        else:
            shown = proposal.model_dump(mode="json")
            editable = set(self.edit_model.model_fields) if self.edit_model else set(shown)
            args = {name: value for name, value in shown.items() if name in editable}
        extra = self.action_description(proposal) if self.action_description else ""
        description = f"{title}\n\n{extra}" if extra else title
        return ActionRequest(name=self.name, args=args, description=description)

    def restore(self, value: Any) -> TypedDecision[EditT]:
        """Validate a resume value (or a decision kept in the state) against this kind."""
        answer = ConsentDecision.model_validate(value)
        if answer.decision not in (*self.allowed_decisions, "expire"):
            raise ValueError(f"{self.name}: decision {answer.decision!r} is not allowed")
        edit = self.parse_edit(answer.edited) if answer.decision == "edit" else None
        return TypedDecision(
            approval_id=answer.approval_id,
            decision=answer.decision,
            edit=edit,
            comment=answer.comment,
            decided_by=answer.decided_by,
        )

    def parse_edit(self, edited: dict[str, Any] | None) -> EditT:
        """Validate a person's edit; raises ``pydantic.ValidationError`` when it is invalid."""
        if self.edit_model is None:
            raise ValueError(f"consent kind {self.name!r} takes no edits")
        return self.edit_model.model_validate(edited or {})

    def json_schemas(self) -> dict[str, Any]:
        """The kind as the server publishes it (``GET /v1/consent-kinds``)."""
        return {
            "kind": self.name,
            "description": self.description,
            "allowed_decisions": list(self.allowed_decisions),
            "ttl_seconds": self.ttl_seconds,
            "always_ask": self.always_ask,
            "proposal_schema": self.proposal_model.model_json_schema(),
            "edit_schema": self.edit_model.model_json_schema() if self.edit_model else None,
        }


class ConsentNotGrantedError(Exception):
    """An effect was asked for an approval no person or policy approved (or edited): nothing is
    applied. The server's ledger raises it from ``recall`` when the decision is not on record,
    whatever the graph's state says (a state written by hand, a decision that was never made)."""

    def __init__(self, approval_id: str) -> None:
        super().__init__(f"no approved consent {approval_id!r} is on record: nothing was applied")
        self.approval_id = approval_id


class EffectLedger(Protocol):
    """Results of effects, by approval id: what makes an effect node safe to re-run."""

    async def recall(self, approval_id: str) -> dict[str, Any] | None:
        """The effect's recorded result, or None when it has not run (the server's ledger
        raises :class:`ConsentNotGrantedError` when the approval was not granted)."""
        ...

    async def remember(self, approval_id: str, kind: str, result: dict[str, Any]) -> None: ...


class InMemoryEffectLedger:
    """An :class:`EffectLedger` in a dict, for tests and examples (the server keeps its own)."""

    def __init__(self) -> None:
        self.results: dict[str, dict[str, Any]] = {}
        self.kinds: dict[str, str] = {}

    async def recall(self, approval_id: str) -> dict[str, Any] | None:
        return self.results.get(approval_id)

    async def remember(self, approval_id: str, kind: str, result: dict[str, Any]) -> None:
        self.results[approval_id] = result
        self.kinds[approval_id] = kind


ResultT = TypeVar("ResultT", bound=BaseModel)


async def run_effect_once(
    ledger: EffectLedger,
    *,
    approval_id: str,
    kind: str,
    result_model: type[ResultT],
    effect: Callable[[], Awaitable[ResultT]],
) -> ResultT:
    """Run ``effect`` for an approval unless the ledger already has its result.

    LangGraph re-runs a node after a crash or a retry; with this, the effect behind one approval
    happens once and a re-run returns the recorded result. For effects outside Consentry's
    database this is at-least-once with deduplication (a crash between the effect and
    ``remember`` repeats it): make such effects idempotent by ``approval_id`` too. Effects on
    Consentry's own tables (the notes store) write their ledger row in the same transaction.
    """
    recorded = await ledger.recall(approval_id)
    if recorded is not None:
        return result_model.model_validate(recorded)
    result = await effect()
    await ledger.remember(approval_id, kind, result.model_dump(mode="json"))
    return result
