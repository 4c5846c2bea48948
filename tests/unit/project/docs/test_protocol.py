"""docs/protocol.md is code: each JSON example is a valid wire object, and every event type and
terminal reason is documented."""

from __future__ import annotations

import json
import re
from typing import Any, get_args

from consentry.schemas.chat import ChatRequest
from consentry.schemas.errors import ErrorBody
from consentry.schemas.events import EVENT_ADAPTER, TerminalReason, Trigger
from consentry.schemas.me import Me
from consentry_graphs.models import ModelFaultCode
from tests.paths import DOCS, ROOT

DOC = (DOCS / "protocol.md").read_text(encoding="utf-8")
_JSON_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


def _examples() -> list[dict[str, Any]]:
    return [json.loads(block) for block in _JSON_BLOCK.findall(DOC)]


def test_every_json_example_is_a_valid_wire_object() -> None:
    seen = {"event": set(), "request": 0, "error": 0, "me": 0}
    for example in _examples():
        if "type" in example:
            seen["event"].add(EVENT_ADAPTER.validate_python(example).type)
        elif "error" in example:
            ErrorBody.model_validate(example)
            seen["error"] += 1
        elif "principal" in example:
            Me.model_validate(example)
            seen["me"] += 1
        else:
            ChatRequest.model_validate(example)
            seen["request"] += 1
    assert seen["request"] >= 2
    assert seen["error"] >= 1
    assert seen["me"] == 1
    assert seen["event"] == {
        "run_started",
        "step",
        "token",
        "message",
        "tool_call",
        "tool_result",
        "model_retry",
        "consent",
        "note",
        "error",
        "final",
        "resync",
    }


def test_every_terminal_reason_is_documented() -> None:
    for reason in get_args(TerminalReason):
        assert f"| `{reason}` |" in DOC


def test_every_model_fault_code_is_in_the_table_of_error_event_codes() -> None:
    table = DOC.split("### Codes of `error` events", 1)[1]
    for code in get_args(ModelFaultCode):
        assert f"| `{code}` |" in table


def test_every_run_trigger_is_documented() -> None:
    for trigger in get_args(Trigger):
        assert f"`{trigger}`" in DOC.split("#### `run_started`", 1)[0]


def test_every_error_code_the_backend_uses_is_documented() -> None:
    backend = ROOT / "backend"
    source = "\n".join(p.read_text(encoding="utf-8") for p in backend.rglob("*.py"))
    codes = set(re.findall(r'code="([a-z_]+)"', source))
    codes |= set(re.findall(r'RunFailure\(\s*"([a-z_]+)"', source))
    codes |= {
        f"{thing}_not_found" for thing in re.findall(r'NotFoundError\.of\("([a-z_]+)"', source)
    }
    codes |= set(re.findall(r'default_code = "([a-z_]+)"', source))
    codes |= set(get_args(ModelFaultCode))
    assert len(codes) > 20
    undocumented = sorted(code for code in codes if f"`{code}`" not in DOC)
    assert undocumented == []
