"""Two consents at once: parallel branches that each ask, resumable by id in any order or together.

    START ─┬─ request_publish_consent ─ publish_post ─┬─ END
           └─ request_notify_consent ── notify_team ──┘

The user's message is a post: one branch asks to publish it, the other asks to tell the team. Both
consent nodes run in the same step, so the run stops with two pending interrupts, each with its
own id. Resume them one at a time by id (``Command(resume={id: decision})``, in either order; the
other one stays pending with the same id), or both in one ``Command(resume={id_a: …, id_b: …})``.
The branches continue once both are decided; each effect runs once per approval id through
:func:`consentry_graphs.consent.run_effect_once`.

Serve it with ``CONSENTRY_GRAPHS=parallel=consentry_graphs.examples.parallel_consents:graph_spec``.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel, ConfigDict, Field

from consentry_graphs.consent import ConsentKind, run_effect_once
from consentry_graphs.registry import GraphSpec
from consentry_graphs.services import graph_services

__all__ = [
    "NOTIFY_TEAM",
    "PUBLISH_POST",
    "Outbox",
    "build_parallel_consents_graph",
    "graph_spec",
]

CHANNEL = "blog"
TEAM = "editors"


class PublishPostProposal(BaseModel):
    channel: str
    text: str


class PublishPostRevision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(
        min_length=1, max_length=2000, description="The post as it will be published."
    )


class NotifyTeamProposal(BaseModel):
    team: str
    message: str


PUBLISH_POST: ConsentKind[PublishPostProposal, PublishPostRevision] = ConsentKind(
    name="publish_post",
    proposal_model=PublishPostProposal,
    edit_model=PublishPostRevision,
    description="Publish a post on a channel (a person may reword it).",
)
NOTIFY_TEAM: ConsentKind[NotifyTeamProposal, BaseModel] = ConsentKind(
    name="notify_team",
    proposal_model=NotifyTeamProposal,
    edit_model=None,
    allowed_decisions=("approve", "reject"),
    ttl_seconds=3600,
    description="Send a message to a team's chat.",
)


class Published(BaseModel):
    post_id: str
    channel: str
    text: str


class Notified(BaseModel):
    team: str
    message: str


class Outbox:
    """Stands for the outside world (a blog and a team chat), in memory."""

    def __init__(self) -> None:
        self.posts: list[Published] = []
        self.notifications: list[Notified] = []

    async def publish(self, channel: str, text: str) -> Published:
        post = Published(post_id=f"post-{len(self.posts) + 1}", channel=channel, text=text)
        self.posts.append(post)
        return post

    async def notify(self, team: str, message: str) -> Notified:
        notification = Notified(team=team, message=message)
        self.notifications.append(notification)
        return notification


OUTBOX = Outbox()
"""The outbox a served graph uses; tests pass their own to ``build_parallel_consents_graph``."""


class ParallelState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    project_id: str
    note_id: str | None
    # One key per branch: parallel nodes must not write the same key (it has no reducer).
    publish_decision: dict[str, Any]
    notify_decision: dict[str, Any]


def _post_text(state: ParallelState) -> str:
    return next((m.text for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), "")


def _say(text: str) -> AIMessage:
    return AIMessage(text, id=f"msg-{uuid4().hex}")


class ParallelConsentNodes:
    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox

    async def request_publish_consent(self, state: ParallelState) -> dict[str, Any]:
        proposal = PublishPostProposal(channel=CHANNEL, text=_post_text(state))
        decision = PUBLISH_POST.ask(title=f"Publish this post on {CHANNEL}?", proposal=proposal)
        return {"publish_decision": decision.to_state()}

    async def request_notify_consent(self, state: ParallelState) -> dict[str, Any]:
        proposal = NotifyTeamProposal(team=TEAM, message=f"New post: {_post_text(state)}")
        decision = NOTIFY_TEAM.ask(title=f"Tell the {TEAM} about it?", proposal=proposal)
        return {"notify_decision": decision.to_state()}

    async def publish_post(self, state: ParallelState) -> dict[str, Any]:
        decision = PUBLISH_POST.restore(state["publish_decision"])
        if not decision.approved:
            return {"messages": [_say(f"Not published ({decision.decision}).")]}
        text = decision.edit.text if decision.edit is not None else _post_text(state)
        post = await run_effect_once(
            graph_services().effects,
            approval_id=decision.approval_id,
            kind=PUBLISH_POST.name,
            result_model=Published,
            effect=lambda: self.outbox.publish(CHANNEL, text),
        )
        return {"messages": [_say(f"Published {post.post_id} on {post.channel}.")]}

    async def notify_team(self, state: ParallelState) -> dict[str, Any]:
        decision = NOTIFY_TEAM.restore(state["notify_decision"])
        if not decision.approved:
            return {"messages": [_say(f"The {TEAM} were not told ({decision.decision}).")]}
        sent = await run_effect_once(
            graph_services().effects,
            approval_id=decision.approval_id,
            kind=NOTIFY_TEAM.name,
            result_model=Notified,
            effect=lambda: self.outbox.notify(TEAM, f"New post: {_post_text(state)}"),
        )
        return {"messages": [_say(f"Told the {sent.team}.")]}


STEP_LABELS = {
    "request_publish_consent": "Asking to publish",
    "request_notify_consent": "Asking to tell the team",
    "publish_post": "Publishing",
    "notify_team": "Telling the team",
}


def build_parallel_consents_graph(
    model: BaseChatModel | None = None,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    *,
    outbox: Outbox | None = None,
) -> CompiledStateGraph[ParallelState, None, ParallelState, ParallelState]:
    """The graph; it needs no chat model (the server passes one to every graph)."""
    nodes = ParallelConsentNodes(outbox if outbox is not None else OUTBOX)
    builder = StateGraph(ParallelState)
    builder.add_node("request_publish_consent", nodes.request_publish_consent)
    builder.add_node("request_notify_consent", nodes.request_notify_consent)
    builder.add_node("publish_post", nodes.publish_post)
    builder.add_node("notify_team", nodes.notify_team)
    builder.add_edge(START, "request_publish_consent")
    builder.add_edge(START, "request_notify_consent")
    builder.add_edge("request_publish_consent", "publish_post")
    builder.add_edge("request_notify_consent", "notify_team")
    builder.add_edge("publish_post", END)
    builder.add_edge("notify_team", END)
    return builder.compile(checkpointer=checkpointer, name="parallel_consents")


def graph_spec() -> GraphSpec:
    """The factory ``CONSENTRY_GRAPHS`` points at."""
    return GraphSpec(
        name="parallel_consents",
        build=build_parallel_consents_graph,
        step_labels=STEP_LABELS,
        consent_kinds={kind.name: kind for kind in (PUBLISH_POST, NOTIFY_TEAM)},
    )
