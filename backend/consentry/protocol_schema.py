"""The protocol's JSON Schema, generated from the wire models (``docs/protocol.schema.json``).

Besides requests, events and errors it holds the proposal and edit models of every consent kind
of the built-in graphs (graphs added with ``CONSENTRY_GRAPHS`` publish theirs at
``GET /v1/consent-kinds``)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import JsonSchemaMode

from consentry.schemas.approvals import (
    Approval,
    ApprovalChange,
    ApprovalList,
    ApprovalsReady,
    DecisionAccepted,
    DecisionRequest,
)
from consentry.schemas.audit import AuditTrail
from consentry.schemas.chat import ChatRequest
from consentry.schemas.consent_kinds import ConsentKindList
from consentry.schemas.errors import ErrorBody
from consentry.schemas.events import Event
from consentry.schemas.graphs import GraphList
from consentry.schemas.me import Me
from consentry.schemas.notes import NoteVersionList
from consentry.schemas.threads import ThreadDetail, ThreadList, ToolCallList
from consentry_graphs.registry import BUILTIN_GRAPHS

__all__ = ["protocol_schema", "protocol_schema_json"]

_MODELS: dict[str, Any] = {
    "ChatRequest": ChatRequest,
    "Event": Event,
    "ErrorBody": ErrorBody,
    "ThreadDetail": ThreadDetail,
    "ThreadList": ThreadList,
    "ToolCallList": ToolCallList,
    "ConsentKindList": ConsentKindList,
    "GraphList": GraphList,
    "Approval": Approval,
    "ApprovalList": ApprovalList,
    "ApprovalChange": ApprovalChange,
    "ApprovalsReady": ApprovalsReady,
    "DecisionRequest": DecisionRequest,
    "DecisionAccepted": DecisionAccepted,
    "AuditTrail": AuditTrail,
    "Me": Me,
    "NoteVersionList": NoteVersionList,
}


def _consent_kind_models() -> dict[str, Any]:
    """The proposal and edit models of each built-in consent kind, by class name."""
    models: dict[str, Any] = {}
    for spec in BUILTIN_GRAPHS.values():
        for kind in spec.consent_kinds.values():
            for model in (kind.proposal_model, kind.edit_model):
                if model is not None:
                    models[model.__name__] = model
    return models


def protocol_schema() -> dict[str, Any]:
    definitions: dict[str, Any] = {}
    for name, model in {**_MODELS, **_consent_kind_models()}.items():
        # Events as the server sends them: every field present (see ``_Envelope``).
        mode: JsonSchemaMode = "serialization" if name == "Event" else "validation"
        schema = TypeAdapter(model).json_schema(ref_template="#/$defs/{model}", mode=mode)
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
