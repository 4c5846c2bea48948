"""The parallel-consents example: two branches ask at once; both consents are resumable by id, in
either order or together, and each effect runs once per approval id.

Each run is asserted as its whole sequence of steps; the nodes of one step run in parallel, so a
step is a set of what each node did (asked, decided, said)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from consentry_graphs.consent import ConsentDecision, ConsentRequest, InMemoryEffectLedger, Outcome
from consentry_graphs.examples.parallel_consents import (
    Outbox,
    Published,
    build_parallel_consents_graph,
)
from consentry_graphs.services import GraphServices, serving

POST = "We shipped consent that holds."
PUBLISH, NOTIFY = "request_publish_consent", "request_notify_consent"
Step = frozenset[tuple[str, str, str]]


@dataclass
class Thread:
    """One thread of the example graph, with its outbox and effect ledger."""

    graph: Any
    outbox: Outbox
    ledger: InMemoryEffectLedger
    config: RunnableConfig

    async def run(self, graph_input: Any) -> list[Step]:
        """Run until the graph stops; every step as the set of what its nodes did."""
        # The example reads no notes: its effects go through the ledger to the outbox.
        services = GraphServices(notes=None, effects=self.ledger, user="test/alice")
        steps: dict[int, set[tuple[str, str, str]]] = {}
        with serving(services):
            async for event in self.graph.astream(graph_input, self.config, stream_mode="debug"):
                if event["type"] == "task_result":
                    steps.setdefault(event["step"], set()).add(_what(event["payload"]))
        return [frozenset(steps[number]) for number in sorted(steps)]

    async def pending(self) -> dict[str, tuple[str, ConsentRequest]]:
        """Pending consents by kind: (interrupt id, request)."""
        state = await self.graph.aget_state(self.config)
        requests = [(i.id, ConsentRequest.model_validate(i.value)) for i in state.interrupts]
        return {request.kind: (interrupt_id, request) for interrupt_id, request in requests}


def _what(task: dict[str, Any]) -> tuple[str, str, str]:
    name, result = task["name"], task["result"]
    if task["interrupts"]:
        (interrupt,) = task["interrupts"]
        return name, "asks", interrupt["id"]
    for key in ("publish_decision", "notify_decision"):
        if key in result:
            return name, "decided", result[key]["decision"]
    (message,) = result["messages"]
    return name, "says", message.content


def _decision(
    approval_id: str, decision: Outcome, *, decided_by: str = "test/alice", **extra: Any
) -> dict[str, Any]:
    return ConsentDecision(
        approval_id=approval_id, decision=decision, decided_by=decided_by, **extra
    ).model_dump()


@pytest.fixture
def thread() -> Thread:
    outbox = Outbox()
    graph = build_parallel_consents_graph(None, InMemorySaver(), outbox=outbox)
    return Thread(graph, outbox, InMemoryEffectLedger(), {"configurable": {"thread_id": "t-1"}})


async def _both_asked(thread: Thread) -> tuple[str, str]:
    steps = await thread.run({"messages": [HumanMessage(POST)]})
    pending = await thread.pending()
    publish_id, notify_id = pending["publish_post"][0], pending["notify_team"][0]
    assert steps == [{(PUBLISH, "asks", publish_id), (NOTIFY, "asks", notify_id)}]
    return publish_id, notify_id


BOTH_DONE = {
    ("publish_post", "says", "Published post-1 on blog."),
    ("notify_team", "says", "Told the editors."),
}


async def test_both_branches_ask_at_once_with_distinct_ids_and_act_on_nothing(
    thread: Thread,
) -> None:
    publish_id, notify_id = await _both_asked(thread)

    assert publish_id != notify_id
    pending = await thread.pending()
    publish, notify = pending["publish_post"][1], pending["notify_team"][1]
    assert (publish.proposal, publish.allowed_decisions, publish.ttl_seconds) == (
        {"channel": "blog", "text": POST},
        ["approve", "edit", "reject"],
        None,
    )
    assert (notify.proposal, notify.allowed_decisions, notify.ttl_seconds) == (
        {"team": "editors", "message": f"New post: {POST}"},
        ["approve", "reject"],
        3600,
    )
    assert (thread.outbox.posts, thread.outbox.notifications, thread.ledger.results) == ([], [], {})


@pytest.mark.parametrize("first", ["publish_post", "notify_team"])
async def test_resuming_one_by_id_leaves_the_other_pending_with_the_same_id(
    thread: Thread, first: str
) -> None:
    ids = dict(zip(("publish_post", "notify_team"), await _both_asked(thread), strict=True))
    nodes = {"publish_post": PUBLISH, "notify_team": NOTIFY}
    (second,) = set(ids) - {first}
    asked_before = (await thread.pending())[second]

    steps = await thread.run(Command(resume={ids[first]: _decision(ids[first], "approve")}))

    assert steps == [{(nodes[first], "decided", "approve"), (nodes[second], "asks", ids[second])}]
    assert await thread.pending() == {second: asked_before}
    assert (thread.outbox.posts, thread.outbox.notifications) == ([], [])

    steps = await thread.run(Command(resume={ids[second]: _decision(ids[second], "approve")}))

    assert steps == [{(nodes[second], "decided", "approve")}, BOTH_DONE]
    assert await thread.pending() == {}
    assert thread.outbox.posts == [Published(post_id="post-1", channel="blog", text=POST)]
    assert [n.message for n in thread.outbox.notifications] == [f"New post: {POST}"]
    assert thread.ledger.kinds == {
        ids["publish_post"]: "publish_post",
        ids["notify_team"]: "notify_team",
    }


async def test_resuming_both_in_one_command_runs_both_branches(thread: Thread) -> None:
    publish_id, notify_id = await _both_asked(thread)

    steps = await thread.run(
        Command(
            resume={
                publish_id: _decision(publish_id, "edit", edited={"text": "Consent holds."}),
                notify_id: _decision(notify_id, "reject", comment="not yet"),
            }
        )
    )

    assert steps == [
        {(PUBLISH, "decided", "edit"), (NOTIFY, "decided", "reject")},
        {
            ("publish_post", "says", "Published post-1 on blog."),
            ("notify_team", "says", "The editors were not told (reject)."),
        },
    ]
    assert thread.outbox.posts == [
        Published(post_id="post-1", channel="blog", text="Consent holds.")
    ]
    assert thread.outbox.notifications == []
    assert list(thread.ledger.results) == [publish_id]


async def test_expired_consents_take_the_not_approved_path(thread: Thread) -> None:
    publish_id, notify_id = await _both_asked(thread)

    steps = await thread.run(
        Command(
            resume={
                publish_id: _decision(publish_id, "expire", decided_by="system"),
                notify_id: _decision(notify_id, "expire", decided_by="system"),
            }
        )
    )

    assert steps == [
        {(PUBLISH, "decided", "expire"), (NOTIFY, "decided", "expire")},
        {
            ("publish_post", "says", "Not published (expire)."),
            ("notify_team", "says", "The editors were not told (expire)."),
        },
    ]
    assert (thread.outbox.posts, thread.outbox.notifications, thread.ledger.results) == ([], [], {})


async def test_a_rerun_of_the_effect_step_runs_each_effect_once(thread: Thread) -> None:
    publish_id, notify_id = await _both_asked(thread)
    await thread.run(
        Command(
            resume={
                publish_id: _decision(publish_id, "approve"),
                notify_id: _decision(notify_id, "approve"),
            }
        )
    )
    history = [s async for s in thread.graph.aget_state_history(thread.config)]
    before_effects = next(s for s in history if set(s.next) == {"publish_post", "notify_team"})

    replay = Thread(thread.graph, thread.outbox, thread.ledger, before_effects.config)
    steps = await replay.run(None)

    assert steps == [BOTH_DONE]
    assert len(thread.outbox.posts) == len(thread.outbox.notifications) == 1
