"""The protocol's JSON Schema, generated from the wire models (``docs/protocol.schema.json``)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from backend.schemas.chat import ChatRequest
from backend.schemas.errors import ErrorBody
from backend.schemas.events import Event
from backend.schemas.threads import ThreadDetail
from graphs.tutor.state import NoteEditProposal, NoteEditRevision

__all__ = ["protocol_schema", "protocol_schema_json"]

_MODELS: dict[str, Any] = {
    "ChatRequest": ChatRequest,
    "Event": Event,
    "ErrorBody": ErrorBody,
    "ThreadDetail": ThreadDetail,
    "NoteEditProposal": NoteEditProposal,
    "NoteEditRevision": NoteEditRevision,
}


def protocol_schema() -> dict[str, Any]:
    definitions: dict[str, Any] = {}
    for name, model in _MODELS.items():
        schema = TypeAdapter(model).json_schema(ref_template="#/$defs/{model}")
        definitions.update(schema.pop("$defs", {}))
        definitions[name] = schema
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Consentry chat protocol",
        "description": "Requests, SSE events and errors of the Consentry API (generated).",
        "$defs": dict(sorted(definitions.items())),
    }


def protocol_schema_json() -> str:
    return json.dumps(protocol_schema(), indent=2, sort_keys=False) + "\n"
