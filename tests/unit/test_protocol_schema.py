"""The protocol's JSON Schema in docs/ is generated from the pydantic models and must not drift."""

from __future__ import annotations

import json

from consentry.protocol_schema import protocol_schema, protocol_schema_json
from consentry.schemas.events import EVENT_ADAPTER
from tests.paths import DOCS

SCHEMA_FILE = DOCS / "protocol.schema.json"


def test_docs_protocol_schema_matches_the_models() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == protocol_schema_json(), (
        "docs/protocol.schema.json is out of date: run `make schema`"
    )


def test_schema_lists_every_event_type_of_the_union() -> None:
    definitions = protocol_schema()["$defs"]
    union = EVENT_ADAPTER.json_schema()
    types = sorted(union["discriminator"]["mapping"])
    assert types == [
        "consent",
        "error",
        "final",
        "message",
        "model_retry",
        "note",
        "resync",
        "run_started",
        "step",
        "token",
        "tool_call",
        "tool_result",
    ]
    assert definitions["Event"]["discriminator"]["propertyName"] == "type"
    assert definitions["FinalEvent"]["properties"]["reason"]["enum"] == [
        "completed",
        "interrupted",
        "expired",
        "failed",
        "cancelled",
        "step_limit",
        "timeout",
        "budget_exhausted",
    ]
    json.dumps(definitions)  # serializable as it is written to disk
