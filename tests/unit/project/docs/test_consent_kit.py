"""docs/consent-kit.md is code: its Python blocks are exact excerpts of files that run here, and
its worked example (graphs/consentry_graphs/examples/refund_consent.py) runs on its own and served
by the app."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from consentry.schemas.events import ConsentEvent, FinalEvent, MessageEvent
from consentry_graphs.consent import ConsentDecision, ConsentRequest, InMemoryEffectLedger
from consentry_graphs.examples import refund_consent
from consentry_graphs.examples.refund_consent import PaymentProvider, Refund, build_refund_graph
from consentry_graphs.services import GraphServices, serving
from tests.paths import ROOT
from tests.sse import chat, kinds

KIT_DOC = ROOT / "docs" / "consent-kit.md"
EXAMPLE = ROOT / "graphs" / "consentry_graphs" / "examples" / "refund_consent.py"
SERVED = "refund=consentry_graphs.examples.refund_consent:graph_spec"
ASK = "Please refund order 7, 1500 cents"
_PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.fixture
def payments(monkeypatch: pytest.MonkeyPatch) -> PaymentProvider:
    """A fresh payment provider for the example (it reads the module's PAYMENTS at call time)."""
    provider = PaymentProvider()
    monkeypatch.setattr(refund_consent, "PAYMENTS", provider)
    return provider


def test_every_python_block_of_the_kit_doc_is_an_excerpt_of_code_that_runs() -> None:
    sources = [EXAMPLE.read_text(encoding="utf-8"), Path(__file__).read_text(encoding="utf-8")]
    blocks = _PYTHON_BLOCK.findall(KIT_DOC.read_text(encoding="utf-8"))

    assert len(blocks) >= 6
    stale = [block for block in blocks if not any(_excerpt_of(block, source) for source in sources)]
    assert stale == [], "docs/consent-kit.md shows code that is not in the files it cites"


def _excerpt_of(block: str, source: str) -> bool:
    """Whether the block's lines appear in order, together, in the source (indent aside)."""
    wanted = [line.strip() for line in block.strip().splitlines()]
    lines = [line.strip() for line in source.splitlines()]
    return any(lines[i : i + len(wanted)] == wanted for i in range(len(lines)))


def test_the_kit_doc_is_linked_from_the_readme_and_the_architecture() -> None:
    assert "(docs/consent-kit.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(consent-kit.md)" in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


async def test_the_refund_example_asks_then_refunds_the_edited_amount_once(
    payments: PaymentProvider,
) -> None:
    graph = build_refund_graph(checkpointer=InMemorySaver())
    ledger = InMemoryEffectLedger()
    services = GraphServices(notes=None, effects=ledger, user="test/alice")  # reads no notes
    config: RunnableConfig = {"configurable": {"thread_id": "order-7"}}
    with serving(services):
        await graph.ainvoke({"messages": [HumanMessage(ASK)]}, config)
    (interrupt,) = (await graph.aget_state(config)).interrupts

    decision = ConsentDecision(
        approval_id=interrupt.id,
        decision="edit",
        edited={"amount_cents": 900},
        decided_by="test/alice",
    )
    with serving(services):
        await graph.ainvoke(Command(resume={interrupt.id: decision.model_dump()}), config)

    request = ConsentRequest.model_validate(interrupt.value)
    assert (request.kind, request.proposal, request.ttl_seconds) == (
        "refund",
        {"order_id": "7", "amount_cents": 1500},
        3600,
    )
    done = await graph.aget_state(config)
    assert done.values["messages"][-1].content == "Refunded 900 cents for order 7 (re_1)."
    assert payments.calls == [interrupt.id]
    assert ledger.results == {
        interrupt.id: {"refund_id": "re_1", "order_id": "7", "amount_cents": 900}
    }

    history = [snapshot async for snapshot in graph.aget_state_history(config)]
    before_refund = next(s for s in history if s.next == ("issue_refund",))
    with serving(services):
        replayed = await graph.ainvoke(None, before_refund.config)

    assert replayed["messages"][-1].content == "Refunded 900 cents for order 7 (re_1)."
    assert payments.calls == [interrupt.id]  # the ledger answered; the provider was not asked


async def test_served_by_the_app_the_refund_graph_asks_and_refunds_once(
    open_client: Callable[..., Any], payments: PaymentProvider
) -> None:
    async with open_client(graphs=SERVED) as client:
        asked = await chat(client, {"graph": "refund", "message": ASK})

        assert kinds(asked) == ["run_started", "step", "step", "consent", "final"]
        assert [e.node for e in asked if e.type == "step"] == [
            "draft_refund",
            "request_refund_consent",
        ]
        consent = asked[-2]
        assert isinstance(consent, ConsentEvent)
        assert (consent.kind, consent.title, consent.proposal) == (
            "refund",
            "Refund order 7?",
            {"order_id": "7", "amount_cents": 1500},
        )
        open_for = consent.expires_at - consent.ts  # the kind's ttl, not the server's default
        assert abs(open_for - timedelta(hours=1)) < timedelta(seconds=1)

        refused = await client.post(
            "/v1/chat",
            json={
                "thread_id": consent.thread_id,
                "resume": {
                    "approval_id": consent.approval_id,
                    "decision": "edit",
                    "edited": {"amount_cents": -5},
                },
            },
        )
        assert refused.status_code == 422, refused.text
        assert payments.calls == []

        done = await chat(
            client,
            {
                "thread_id": consent.thread_id,
                "resume": {
                    "approval_id": consent.approval_id,
                    "decision": "edit",
                    "edited": {"amount_cents": 900},
                },
            },
        )

        assert kinds(done) == ["run_started", "step", "step", "message", "final"]
        assert [e.node for e in done if e.type == "step"] == [
            "request_refund_consent",
            "issue_refund",
        ]
        message = done[-2]
        assert isinstance(message, MessageEvent)
        assert message.content == "Refunded 900 cents for order 7 (re_1)."
        final = done[-1]
        assert isinstance(final, FinalEvent)
        assert final.reason == "completed"
        assert payments.refunds == {
            consent.approval_id: Refund(refund_id="re_1", order_id="7", amount_cents=900)
        }
        assert payments.calls == [consent.approval_id]


async def test_served_by_the_app_a_message_without_an_order_asks_nothing(
    open_client: Callable[..., Any], payments: PaymentProvider
) -> None:
    async with open_client(graphs=SERVED) as client:
        events = await chat(client, {"graph": "refund", "message": "Refund my money"})

    assert kinds(events) == ["run_started", "step", "message", "final"]
    message = events[-2]
    assert isinstance(message, MessageEvent)
    assert message.content == (
        "Which order, and how much? Say \u201crefund order 7, 1500 cents\u201d."
    )
    assert payments.calls == []
