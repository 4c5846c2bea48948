"""The code examples in docs/ run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from graphs.consent import ConsentDecision, ConsentRequest

EXAMPLES = Path(__file__).parents[2] / "docs" / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


async def test_the_refund_example_asks_then_refunds_the_edited_amount_once() -> None:
    example = _load("refund_consent")
    graph = example.build_refund_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "order-7"}}

    first = await graph.ainvoke({"order_id": "7", "amount_cents": 1500}, config)
    (interrupt,) = first["__interrupt__"]
    request = ConsentRequest.model_validate(interrupt.value)
    assert (request.kind, request.proposal) == ("refund", {"order_id": "7", "amount_cents": 1500})

    decision = ConsentDecision(
        approval_id=interrupt.id,
        decision="edit",
        edited={"amount_cents": 900},
        decided_by="local/local",
    )
    done = await graph.ainvoke(Command(resume={interrupt.id: decision.model_dump()}), config)

    assert done["outcome"] == "refunded 900 cents"
    assert list(example.ISSUED.items()) == [(interrupt.id, 900)]
    assert "docs/examples/refund_consent.py" in (EXAMPLES.parent / "architecture.md").read_text()
