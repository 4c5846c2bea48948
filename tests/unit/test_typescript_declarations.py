"""backend/consentry/web/consentry-protocol.d.ts: TypeScript declarations generated from the
protocol's JSON Schema.

They must not drift from the models, must declare every SSE event of the union, and must satisfy
a real TypeScript checker (Deno's, from the `deno` package on PyPI) on events as the server writes
them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from consentry.schemas.chat import ChatRequest
from consentry.schemas.events import EVENT_ADAPTER, Event
from consentry.typescript_declarations import (
    UnsupportedSchemaError,
    schema_declarations,
    typescript_declarations,
)
from tests.paths import ROOT

DECLARATIONS_FILE = ROOT / "backend" / "consentry" / "web" / "consentry-protocol.d.ts"


def _event_models() -> list[type[BaseModel]]:
    """The members of the pydantic `Event` union, in its order."""
    union, _discriminator = get_args(Event)
    return list(get_args(union))


def _type_literal(model: type[BaseModel]) -> str:
    (literal,) = get_args(model.model_fields["type"].annotation)
    return str(literal)


def _block(code: str, opening: str, closing: str) -> str:
    """The declaration that starts with `opening`, up to `closing`."""
    start = code.index(opening)
    return code[start : code.index(closing, start)]


# Drift


def test_committed_declarations_match_the_protocol_schema() -> None:
    assert DECLARATIONS_FILE.read_text(encoding="utf-8") == typescript_declarations(), (
        "backend/consentry/web/consentry-protocol.d.ts is out of date: run `make schema`"
    )


def test_the_module_prints_the_same_declarations_under_another_hash_seed() -> None:
    command = [sys.executable, "-m", "consentry.typescript_declarations"]
    env = {**os.environ, "PYTHONHASHSEED": "12345"}  # this process has a random one
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert result.stdout == typescript_declarations()


# Every event of the union


def test_consentry_event_is_the_union_of_every_event_model_in_its_order() -> None:
    code = typescript_declarations()
    union = _block(code, "export type ConsentryEvent =", ";\n")
    members = re.findall(r"\|\s+(\w+)", union)
    assert members == [model.__name__ for model in _event_models()]
    for model in _event_models():
        interface = _block(code, f"export interface {model.__name__} {{", "\n}")
        assert f'\n  type: "{_type_literal(model)}";' in interface, model.__name__
    assert 'export type ConsentryEventType = ConsentryEvent["type"];' in code
    assert (
        "export type ConsentryEventOf<T extends ConsentryEventType> = "
        "Extract<ConsentryEvent, { type: T }>;"
    ) in code


def test_declarations_hold_no_any_and_unknown_only_where_the_schema_is_open() -> None:
    lines = typescript_declarations().splitlines()
    code = [(i, line) for i, line in enumerate(lines) if not line.lstrip().startswith(("/", "*"))]
    assert not [line for _, line in code if re.search(r"\bany\b", line)]
    for index, line in code:
        if "unknown" in line and "ConsentryEvent" not in line:
            doc = "\n".join(lines[max(0, index - 6) : index])
            assert "Open:" in doc.rsplit("/**", 1)[-1], line


# The generator on small schemas


def _declare(**definitions: Any) -> str:
    return schema_declarations({"$defs": definitions})


def test_required_properties_are_plain_and_the_others_optional_with_their_default() -> None:
    thing = {
        "type": "object",
        "description": "A thing.",
        "properties": {
            "name": {"type": "string", "description": "Its name. Not */ the end."},
            "size": {"type": "integer", "default": 3, "minimum": 0},
            "ok": {"type": "boolean"},
        },
        "required": ["name", "ok"],
        "additionalProperties": False,
    }
    assert _declare(Thing=thing) == (
        "/**\n"
        " * A thing.\n"
        " * Closed: the server rejects properties not declared here.\n"
        " */\n"
        "export interface Thing {\n"
        "  /** Its name. Not *\\/ the end. */\n"
        "  name: string;\n"
        "  /**\n"
        "   * @minimum 0\n"
        "   * @default 3\n"
        "   */\n"
        "  size?: number;\n"
        "  ok: boolean;\n"
        "}\n"
    )


def test_nullable_enum_const_refs_and_arrays_become_unions_literals_names_and_lists() -> None:
    parent = {
        "type": "object",
        "properties": {
            "child": {"anyOf": [{"$ref": "#/$defs/Child"}, {"type": "null"}]},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Child"}},
            "maybe": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
            "kind": {"const": "parent", "type": "string"},
            "mood": {"enum": ["calm", "busy", 1, True, None]},
            "at": {"type": "string", "format": "date-time"},
        },
        "required": ["child", "children", "maybe", "kind", "mood", "at"],
    }
    child = {"title": "A child", "type": "object", "properties": {}}
    assert _declare(Parent=parent, Child=child) == (
        "/** A child */\n"
        "export interface Child {\n"
        "}\n"
        "\n"
        "export interface Parent {\n"
        "  child: Child | null;\n"
        "  children: Child[];\n"
        "  maybe: (number | null)[];\n"
        '  kind: "parent";\n'
        '  mood: "calm" | "busy" | 1 | true | null;\n'
        "  /** @format date-time */\n"
        "  at: string;\n"
        "}\n"
    )


def test_open_schemas_are_unknown_and_say_so() -> None:
    assert _declare(
        Anything={},
        Bag={"type": "object", "additionalProperties": True},
        Counts={"type": "object", "additionalProperties": {"type": "integer"}},
        Open={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
        | {"additionalProperties": True},
    ) == (
        "/** Open: the schema does not fix these values, hence `unknown`. */\n"
        "export type Anything = unknown;\n"
        "\n"
        "/** Open: the schema does not fix these values, hence `unknown`. */\n"
        "export type Bag = Record<string, unknown>;\n"
        "\n"
        "export type Counts = Record<string, number>;\n"
        "\n"
        "export interface Open {\n"
        "  id: string;\n"
        "  /** Open: more properties of any JSON value. */\n"
        "  [key: string]: unknown;\n"
        "}\n"
    )


def _tagged(tag: str, *, required: bool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"type": {"const": tag, "default": tag}, "n": {"type": "integer"}},
        "required": ["n", "type"] if required else ["n"],
    }


def test_a_discriminated_union_lists_its_members_whose_tag_is_always_present() -> None:
    union = {
        "oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}, {"$ref": "#/$defs/C"}],
        "discriminator": {
            "propertyName": "type",
            "mapping": {"a": "#/$defs/A", "b": "#/$defs/B", "c": "#/$defs/C"},
        },
    }
    schema = {"$defs": {"Any": union} | {n: _tagged(n.lower(), required=False) for n in "ABC"}}
    code = schema_declarations(schema, names={"Any": "Tagged"})
    assert code.startswith('export interface A {\n  type: "a";\n  n: number;\n}\n')
    assert code.endswith("export type Tagged =\n  | A\n  | B\n  | C;\n")


def test_an_object_with_cases_is_its_properties_and_the_union_of_its_cases() -> None:
    """A request model's ``oneOf`` (or ``anyOf``) beside its properties: each case narrows some
    of them or requires them; a required one it does not narrow keeps the object's type."""
    greeting = {
        "type": "object",
        "properties": {
            "text": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "to": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "mood": {"enum": ["calm", "busy"]},
        },
        "required": ["mood"],
        "additionalProperties": False,
        "oneOf": [
            {"required": ["text"], "properties": {"text": {"type": "string"}}},
            {"properties": {"text": {"type": "null"}, "mood": {"const": "busy"}}},
        ],
    }
    assert _declare(Greeting=greeting) == (
        "/** Closed: the server rejects properties not declared here. */\n"
        "export type Greeting = {\n"
        "  /** @default null */\n"
        "  text?: string | null;\n"
        "  /** @default null */\n"
        "  to?: string | null;\n"
        '  mood: "calm" | "busy";\n'
        "} & (\n"
        "  | {\n"
        "      text: string;\n"
        "    }\n"
        "  | {\n"
        "      text?: null;\n"
        '      mood: "busy";\n'
        "    }\n"
        ");\n"
    )


def test_a_discriminator_that_does_not_match_its_members_is_refused() -> None:
    union = {
        "oneOf": [{"$ref": "#/$defs/A"}],
        "discriminator": {"propertyName": "type", "mapping": {"b": "#/$defs/A"}},
    }
    with pytest.raises(UnsupportedSchemaError, match=r"#/\$defs/U: discriminator mapping"):
        _declare(U=union, A=_tagged("a", required=True))


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"allOf": [{"type": "string"}]}, r"#/\$defs/X: unsupported keywords \['allOf'\]"),
        ({"type": ["string", "null"]}, r"type \['string', 'null'\] \(a list of types\)"),
        ({"type": "array", "prefixItems": [{}]}, r"unsupported keywords \['prefixItems'\]"),
        ({"$ref": "#/$defs/Missing"}, r"\$ref '#/\$defs/Missing' is not one of the \$defs"),
        ({"$ref": "other.json#/Thing"}, r"\$ref 'other.json#/Thing' is not one of the \$defs"),
        ({"enum": [{"a": 1}]}, r"literal \{'a': 1\} is no JSON scalar"),
        ({"type": "string", "items": {}}, r"\['items'\] unsupported in a 'string' schema"),
        ({"not": {"type": "null"}}, r"unsupported keywords \['not'\]"),
        ({"type": "tuple"}, r"unsupported type 'tuple'"),
        (
            {"type": "array", "items": {"type": "object", "properties": {"a": {}}}},
            r"#/\$defs/X/items: \['properties'\] unsupported in a 'object' schema",
        ),
        (
            {"type": "object", "properties": {"a": {"patternProperties": {}}}},
            r"#/\$defs/X/properties/a: unsupported keywords \['patternProperties'\]",
        ),
        (
            {"type": "object", "properties": {}, "required": ["a"]},
            r"required \['a'\] are no properties",
        ),
        (
            {"type": "object", "properties": {"a": {}}, "oneOf": [{"type": "object"}]},
            r"#/\$defs/X/oneOf/0: unsupported keywords \['type'\] in a case",
        ),
        (
            {"type": "object", "properties": {"a": {}}, "anyOf": [{"required": ["b"]}]},
            r"#/\$defs/X/anyOf/0: \['b'\] are no properties of the object",
        ),
        (
            {"type": "object", "properties": {"a": {}}, "oneOf": [{}], "anyOf": [{}]},
            r"#/\$defs/X: unsupported keywords \['anyOf'\] here",
        ),
    ],
)
def test_a_construct_the_generator_does_not_know_is_refused_saying_where(
    schema: dict[str, Any], message: str
) -> None:
    with pytest.raises(UnsupportedSchemaError, match=message):
        _declare(X=schema)


def test_a_definition_name_typescript_cannot_use_is_refused() -> None:
    with pytest.raises(UnsupportedSchemaError, match="'Page-1' is no unique TypeScript name"):
        _declare(**{"Page-1": {"type": "string"}})


# A real TypeScript checker

ENVELOPE = {"thread_id": "t1", "run_id": "r1", "seq": 7, "ts": "2026-01-01T12:00:00Z"}
EVENT_FIELDS: dict[str, dict[str, Any]] = {
    "run_started": {"graph": "tutor", "trigger": "message"},
    "step": {"node": "draft_note_edit", "label": "Drafting an edit"},
    "token": {"message_id": "m1", "delta": "Hel"},
    "message": {"message_id": "m1", "content": "Hello"},
    "tool_call": {
        "tool_call_id": "c1",
        "name": "get_weather",
        "args": {"city": "Lisbon"},
        "message_id": "m1",
    },
    "tool_result": {
        "tool_call_id": "c1",
        "name": "get_weather",
        "status": "success",
        "content": "Lisbon: sunny",
        "content_chars": 13,
        "truncated": False,
    },
    "consent": {
        "approval_id": "a1",
        "kind": "note_edit",
        "title": "Edit the note",
        "proposal": {"note_id": "n1", "diff": "+ line", "base_version": 2},
        "allowed_decisions": ["approve", "edit", "reject"],
        "expires_at": "2026-01-01T13:00:00Z",
    },
    "note": {"note_id": "n1", "project_id": "p1", "title": "RAG", "version": 3, "content": "x"},
    "model_retry": {
        "code": "model_rate_limited",
        "attempt": 1,
        "max_attempts": 3,
        "retry_in_seconds": 0.5,
        "discard_message_id": None,
    },
    "error": {"code": "internal_error", "message": "Something failed.", "retryable": False},
    "resync": {"run_id": "", "first_available_seq": None},
    "final": {"reason": "completed", "usage": {"input_tokens": 12, "output_tokens": 30}},
}


def _wire_events() -> list[str]:
    """One event of every type, as the server writes it on the wire (`model_dump_json`)."""
    assert sorted(EVENT_FIELDS) == sorted(_type_literal(m) for m in _event_models()), (
        "give every event type of the union an example in EVENT_FIELDS"
    )
    events = [
        EVENT_ADAPTER.validate_python({**ENVELOPE, "type": type_, **fields})
        for type_, fields in EVENT_FIELDS.items()
    ]
    return [event.model_dump_json() for event in events]


def _consumer_program() -> str:
    """TypeScript a frontend would write: it compiles only if the declarations fit the server."""
    cases = "\n".join(f'    case "{_type_literal(m)}":' for m in _event_models())
    requests = [
        ChatRequest(message="What is RAG?").model_dump_json(),
        ChatRequest.model_validate(
            {"thread_id": "t1", "resume": [{"approval_id": "a1", "decision": "approve"}]}
        ).model_dump_json(),
    ]
    events = ",\n  ".join(_wire_events())
    return f"""\
import type {{
  ChatRequest, ConsentryEvent, ConsentryEventOf, ConsentryEventType, ResumeDecision,
}} from "./consentry-protocol.d.ts";

export const events: ConsentryEvent[] = [
  {events},
];
export const requests: ChatRequest[] = [{", ".join(requests)}];
export const smallest: ChatRequest = {{ message: "hi" }};

export function typeOf(event: ConsentryEvent): ConsentryEventType {{
  switch (event.type) {{
{cases}
      return event.type;
    default: {{
      const unreachable: never = event;
      return unreachable;
    }}
  }}
}}

export function reasonOf(event: ConsentryEventOf<"final">): string {{
  return event.reason;
}}

// @ts-expect-error: `decision` is required
export const undecided: ResumeDecision = {{ approval_id: "a1" }};
// @ts-expect-error: not one of the decisions
export const unsure: ResumeDecision = {{ approval_id: "a1", decision: "maybe" }};
// @ts-expect-error: `edit` comes with `edited`
export const editless: ResumeDecision = {{ approval_id: "a1", decision: "edit" }};
// @ts-expect-error: `edited` comes with `edit` only
export const edited: ResumeDecision = {{ approval_id: "a1", decision: "reject", edited: {{}} }};
const approve: ResumeDecision = {{ approval_id: "a1", decision: "approve" }};
// @ts-expect-error: a message or a resume, not both
export const both: ChatRequest = {{ thread_id: "t1", message: "hi", resume: approve }};
// @ts-expect-error: a message or a resume, not neither
export const neither: ChatRequest = {{ thread_id: "t1" }};
// @ts-expect-error: a resume comes with its thread
export const threadless: ChatRequest = {{ resume: approve }};
"""


def _deno() -> str:
    try:
        from deno import find_deno_bin  # the `deno` dev dependency: Deno's binary, from PyPI
    except ImportError:
        pytest.fail("no Deno: install the dev dependencies (`pip install -e '.[dev]'`)")
    return find_deno_bin()


def _typecheck(program: str, directory: Path) -> subprocess.CompletedProcess[str]:
    (directory / "consentry-protocol.d.ts").write_text(typescript_declarations(), encoding="utf-8")
    (directory / "consumer.ts").write_text(program, encoding="utf-8")
    env = {**os.environ, "DENO_DIR": str(directory / "deno"), "NO_COLOR": "1"}
    env["DENO_NO_UPDATE_CHECK"] = "1"
    command = [_deno(), "check", "--no-config", "--no-lock", "--no-remote", "consumer.ts"]
    return subprocess.run(
        command, cwd=directory, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.deno
def test_typescript_accepts_the_declarations_and_every_event_the_server_writes(
    tmp_path: Path,
) -> None:
    result = _typecheck(_consumer_program(), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.deno
def test_typescript_refuses_an_event_the_declarations_do_not_allow(tmp_path: Path) -> None:
    final = json.loads(_wire_events()[-1]) | {"reason": "bored"}
    program = (
        'import type { ConsentryEventOf } from "./consentry-protocol.d.ts";\n'
        f'export const final: ConsentryEventOf<"final"> = {json.dumps(final)};\n'
    )
    result = _typecheck(program, tmp_path)
    assert result.returncode != 0
    assert "TS2322" in result.stderr + result.stdout
    assert '"bored"' in result.stderr + result.stdout
