"""The consent kit: what an interrupt node asks, and what the person answers.

A consent node *only asks*. It calls :meth:`ConsentKind.ask`, which raises LangGraph's
``interrupt()`` with a :class:`ConsentRequest`; the server turns that into a ``consent`` event and
an approval record. When the person decides, the server validates the decision (allowed decision,
edit against :attr:`ConsentKind.edit_model`) and resumes the graph with a :class:`ConsentDecision`.
Because LangGraph re-runs the interrupted node from its first line on resume, everything before
``ask`` must be pure and cheap; the effect happens in a later node, keyed by
:attr:`ConsentDecision.approval_id`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ConsentDecision",
    "ConsentKind",
    "ConsentRequest",
    "Decision",
]

Decision = Literal["approve", "edit", "reject"]

ProposalT = TypeVar("ProposalT", bound=BaseModel)
EditT = TypeVar("EditT", bound=BaseModel)


class ConsentRequest(BaseModel):
    """The value a consent node passes to ``interrupt()``."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(description="What is being asked, e.g. `note_edit`; selects the edit schema.")
    title: str = Field(description="One line a person reads first.")
    proposal: dict[str, Any] = Field(description="The structured proposal of this kind.")
    allowed_decisions: list[Decision] = Field(min_length=1)
    ttl_seconds: int | None = Field(
        default=None, gt=0, description="How long the request stays open; server default if None."
    )


class ConsentDecision(BaseModel):
    """The value the server resumes a consent node with, after validating it."""

    model_config = ConfigDict(extra="forbid")

    approval_id: str
    decision: Decision
    edited: dict[str, Any] | None = None
    comment: str | None = None
    decided_by: str


@dataclass(frozen=True)
class ConsentKind(Generic[ProposalT, EditT]):
    """One kind of consent a graph can ask for, with the schemas of its proposal and its edit."""

    name: str
    proposal_model: type[ProposalT]
    edit_model: type[EditT]
    allowed_decisions: tuple[Decision, ...] = field(default=("approve", "edit", "reject"))

    def ask(
        self, *, title: str, proposal: ProposalT, ttl_seconds: int | None = None
    ) -> ConsentDecision:
        """Pause the graph until a person decides; return their (validated) decision."""
        request = ConsentRequest(
            kind=self.name,
            title=title,
            proposal=proposal.model_dump(mode="json"),
            allowed_decisions=list(self.allowed_decisions),
            ttl_seconds=ttl_seconds,
        )
        answer = interrupt(request.model_dump(mode="json"))
        return ConsentDecision.model_validate(answer)

    def parse_edit(self, edited: dict[str, Any]) -> EditT:
        """Validate a person's edit; raises ``pydantic.ValidationError`` when it is invalid."""
        return self.edit_model.model_validate(edited)
