"""TypeScript declarations of the protocol (``backend/consentry/web/consentry-protocol.d.ts``), from
its JSON Schema.

A small JSON Schema → TypeScript translator for the constructs pydantic writes into
``docs/protocol.schema.json``: ``$defs``/``$ref``, objects, ``anyOf``/``oneOf`` (with a
``discriminator``), ``const``, ``enum``, arrays, ``additionalProperties`` and the scalar types;
and the ``anyOf``/``oneOf`` a request model adds beside its properties (``json_schema_extra``),
whose cases narrow some of them: the object's properties ``&`` the union of its cases.
Anything else raises :class:`UnsupportedSchemaError` naming where it is: a new construct is taught
here, never guessed as ``any``. ``unknown`` stands only for values the schema leaves open.

``python -m consentry.typescript_declarations`` prints the declarations (``make schema`` writes
them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from consentry.protocol_schema import protocol_schema_json

__all__ = ["UnsupportedSchemaError", "schema_declarations", "typescript_declarations"]

_ANNOTATIONS = frozenset({"title", "description", "default"})
# Validation keywords TypeScript cannot express: kept as JSDoc tags, in this order.
_CONSTRAINTS: tuple[str, ...] = ("format", "minimum", "maximum", "exclusiveMinimum")
_CONSTRAINTS += ("exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems")
_SHAPES = frozenset(
    {"type", "$ref", "anyOf", "oneOf", "discriminator", "const", "enum", "items"}
    | {"properties", "required", "additionalProperties"}
)
_KNOWN = _ANNOTATIONS | frozenset(_CONSTRAINTS) | _SHAPES
_SCALARS = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
}
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
_REF_PREFIX = "#/$defs/"
_OPEN_NOTE = "Open: the schema does not fix these values, hence `unknown`."


class UnsupportedSchemaError(ValueError):
    """The schema uses a construct this generator does not translate (the message says where)."""


class _Generator:
    def __init__(self, definitions: Mapping[str, Any], names: Mapping[str, str]) -> None:
        self.definitions = definitions
        self.names = {key: names.get(key, key) for key in definitions}
        for key, name in self.names.items():
            if not _IDENTIFIER.match(name) or list(self.names.values()).count(name) > 1:
                raise UnsupportedSchemaError(
                    f"#/$defs/{key}: {name!r} is no unique TypeScript name"
                )
            if not isinstance(definitions[key], Mapping):
                raise UnsupportedSchemaError(f"#/$defs/{key}: {definitions[key]!r} is no object")
        self.tags: dict[str, str] = {}  # def key → its discriminator property (always present)
        for key, definition in definitions.items():
            for where, schema in _subschemas(definition, f"#/$defs/{key}"):
                if "discriminator" in schema:
                    self._check_discriminator(schema, where)

    def ref(self, schema: Mapping[str, Any], where: str) -> str:
        target = str(schema["$ref"])
        key = target.removeprefix(_REF_PREFIX)
        if not target.startswith(_REF_PREFIX) or key not in self.definitions:
            raise UnsupportedSchemaError(f"{where}: $ref {target!r} is not one of the $defs")
        return key

    def _check_discriminator(self, schema: Mapping[str, Any], where: str) -> None:
        tag = schema["discriminator"].get("propertyName")
        members = schema.get("oneOf", schema.get("anyOf", []))
        found: dict[str, str] = {}
        for member in members:
            if "$ref" not in member:
                raise UnsupportedSchemaError(f"{where}: discriminated member {member} is no $ref")
            key = self.ref(member, where)
            prop = self.definitions[key].get("properties", {}).get(tag, {})
            if "const" not in prop:
                raise UnsupportedSchemaError(f"{where}: #/$defs/{key} has no const {tag!r}")
            found[prop["const"]] = _REF_PREFIX + key
            self.tags[key] = tag
        mapping = schema["discriminator"].get("mapping", found)
        if not members or mapping != found:
            raise UnsupportedSchemaError(f"{where}: discriminator mapping {mapping} != {found}")

    def render(self, schema: Mapping[str, Any], where: str) -> str:
        if not isinstance(schema, Mapping):
            raise UnsupportedSchemaError(f"{where}: {schema!r} is not a schema object")
        if unknown := sorted(set(schema) - _KNOWN):
            raise UnsupportedSchemaError(f"{where}: unsupported keywords {unknown}")
        shapes = set(schema) & _SHAPES - {"discriminator", "type"}
        if "$ref" in schema:
            _only(schema, {"$ref"}, where)
            return self.names[self.ref(schema, where)]
        for union in ("anyOf", "oneOf"):
            if union in schema:
                _only(schema, {union, "discriminator"}, where)
                parts = [
                    self.render(s, f"{where}/{union}/{i}") for i, s in enumerate(schema[union])
                ]
                return " | ".join(dict.fromkeys(parts)) if parts else "never"
        if "const" in schema or "enum" in schema:
            values = [schema["const"]] if "const" in schema else schema["enum"]
            _only(schema, {"const", "enum"}, where)
            return " | ".join(_literal(value, where) for value in values) or "never"
        kind = schema.get("type")
        if not isinstance(kind, str | None):
            raise UnsupportedSchemaError(f"{where}: type {kind!r} (a list of types) unsupported")
        if kind is None and not shapes:
            return "unknown"  # `{}`: any JSON value
        if kind in _SCALARS:
            _only(schema, set(), where)
            return _SCALARS[kind]
        if kind == "array":
            _only(schema, {"items"}, where)
            item = self.render(schema.get("items", {}), f"{where}/items")
            return f"({item})[]" if " | " in item else f"{item}[]"
        if kind == "object":
            _only(schema, {"additionalProperties"}, where)
            extra = schema.get("additionalProperties", True)
            if extra is True:
                return "Record<string, unknown>"
            if extra is False:
                return "Record<string, never>"
            return f"Record<string, {self.render(extra, f'{where}/additionalProperties')}>"
        raise UnsupportedSchemaError(f"{where}: unsupported type {kind!r} here")

    def declaration(self, key: str) -> list[str]:
        schema, where, name = self.definitions[key], f"#/$defs/{key}", self.names[key]
        docs = [schema["title"]] if schema.get("title", name) not in (name, key) else []
        docs += [schema["description"]] if "description" in schema else []
        if schema.get("type") != "object" or "properties" not in schema:
            text = self.render(schema, where)  # refuses what it cannot translate
            docs += [_OPEN_NOTE] if "unknown" in text else []
            union = schema.get("oneOf", schema.get("anyOf", []))
            if len(union) < 3:
                return [*_jsdoc(docs, ""), f"export type {name} = {text};"]
            parts = [self.render(m, f"{where}/{i}") for i, m in enumerate(union)]
            lines = [f"  | {part}" for part in dict.fromkeys(parts)]
            return [*_jsdoc(docs, ""), f"export type {name} =", *lines[:-1], lines[-1] + ";"]
        cases = next((union for union in ("oneOf", "anyOf") if union in schema), None)
        keywords = {"type", "properties", "required", "additionalProperties"}
        keywords |= {cases} if cases else set()
        if unknown := sorted(set(schema) - _ANNOTATIONS - keywords):
            raise UnsupportedSchemaError(f"{where}: unsupported keywords {unknown} here")
        properties, required = schema["properties"], set(schema.get("required", []))
        if undeclared := sorted(required - set(properties)):
            raise UnsupportedSchemaError(f"{where}: required {undeclared} are no properties")
        required.add(self.tags.get(key, ""))  # a discriminator is always there
        lines = self._members(properties, required, where, indent="  ")
        extra = schema.get("additionalProperties")
        if extra is False:
            docs.append("Closed: the server rejects properties not declared here.")
        elif extra is True:
            lines += [
                "  /** Open: more properties of any JSON value. */",
                "  [key: string]: unknown;",
            ]
        elif extra is not None:
            raise UnsupportedSchemaError(f"{where}: typed additionalProperties beside properties")
        if cases is None:
            return [*_jsdoc(docs, ""), f"export interface {name} {{", *lines, "}"]
        if not schema[cases]:
            raise UnsupportedSchemaError(f"{where}: an empty {cases}")
        lines = [*_jsdoc(docs, ""), f"export type {name} = {{", *lines, "} & ("]
        for index, case in enumerate(schema[cases]):
            lines += self._case(case, properties, required, f"{where}/{cases}/{index}")
        return [*lines, ");"]

    def _members(
        self, properties: Mapping[str, Any], required: set[str], where: str, *, indent: str
    ) -> list[str]:
        """The lines of an object type's properties, each with its JSDoc."""
        lines: list[str] = []
        for prop, prop_schema in properties.items():
            optional = prop not in required
            text = self.render(prop_schema, f"{where}/properties/{prop}")
            notes = [prop_schema.get("description", ""), _OPEN_NOTE if "unknown" in text else ""]
            lines += _jsdoc([*notes, *_tags(prop_schema, optional=optional)], indent)
            label = prop if _IDENTIFIER.match(prop) else json.dumps(prop)
            lines.append(f"{indent}{label}{'?' if optional else ''}: {text};")
        return lines

    def _case(
        self, case: Any, properties: Mapping[str, Any], required: set[str], where: str
    ) -> list[str]:
        """One case of an object's ``anyOf``/``oneOf``, as a member of a union: the properties it
        narrows (``properties``) or requires (``required``; one it does not narrow keeps the
        object's schema). What the object requires stays required."""
        if not isinstance(case, Mapping):
            raise UnsupportedSchemaError(f"{where}: {case!r} is not a schema object")
        if unknown := sorted(set(case) - {"properties", "required"}):
            raise UnsupportedSchemaError(f"{where}: unsupported keywords {unknown} in a case")
        narrowed, demanded = case.get("properties", {}), set(case.get("required", []))
        if strangers := sorted((set(narrowed) | demanded) - set(properties)):
            raise UnsupportedSchemaError(f"{where}: {strangers} are no properties of the object")
        members = {
            prop: narrowed.get(prop, properties[prop])
            for prop in properties
            if prop in narrowed or prop in demanded
        }
        lines = self._members(members, required | demanded, where, indent="      ")
        return ["  | {", *lines, "    }"]


def _only(schema: Mapping[str, Any], allowed: set[str], where: str) -> None:
    """Refuses shape keywords that do not fit the schema's form (e.g. `items` on a string)."""
    if extra := sorted(set(schema) & _SHAPES - allowed - {"type"}):
        form = schema.get("type", " / ".join(sorted(allowed)))
        raise UnsupportedSchemaError(f"{where}: {extra} unsupported in a {form!r} schema")
    if "type" in schema and allowed & {"$ref", "anyOf", "oneOf"}:
        raise UnsupportedSchemaError(f"{where}: `type` beside {sorted(allowed)}")


def _literal(value: Any, where: str) -> str:
    if value is None or isinstance(value, str | bool | int | float):
        return json.dumps(value, ensure_ascii=False)
    raise UnsupportedSchemaError(f"{where}: literal {value!r} is no JSON scalar")


def _subschemas(schema: Mapping[str, Any], where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if not isinstance(schema, Mapping):
        return  # `render` refuses it, saying where
    yield where, schema
    for union in ("anyOf", "oneOf"):
        for index, member in enumerate(schema.get(union, [])):
            yield from _subschemas(member, f"{where}/{union}/{index}")
    for prop, member in schema.get("properties", {}).items():
        yield from _subschemas(member, f"{where}/properties/{prop}")
    for keyword in ("items", "additionalProperties"):
        if isinstance(schema.get(keyword), Mapping):
            yield from _subschemas(schema[keyword], f"{where}/{keyword}")


def _tags(schema: Mapping[str, Any], *, optional: bool) -> list[str]:
    """JSDoc tags for what TypeScript cannot say: constraints, and the default of an optional."""
    found: dict[str, Any] = {}
    for member in [schema, *schema.get("anyOf", []), *schema.get("oneOf", [])]:
        found.update({key: member[key] for key in _CONSTRAINTS if key in member})
    tags = [f"@{key} {found[key]}" for key in _CONSTRAINTS if key in found]
    if optional and "default" in schema:
        tags.append(f"@default {json.dumps(schema['default'], ensure_ascii=False)}")
    return tags


def _jsdoc(paragraphs: list[str], indent: str) -> list[str]:
    text = "\n".join(p for p in paragraphs if p).replace("*/", "*\\/")
    if not text:
        return []
    if "\n" not in text:
        return [f"{indent}/** {text} */"]
    return [
        f"{indent}/**",
        *(f"{indent} * {line}".rstrip() for line in text.split("\n")),
        f"{indent} */",
    ]


def schema_declarations(
    schema: Mapping[str, Any], *, names: Mapping[str, str] | None = None
) -> str:
    """The `$defs` of `schema` as TypeScript declarations, one per definition, sorted by name.

    `names` renames definitions (key → TypeScript name); `$ref`s follow the new names."""
    extra = sorted(set(schema) - {"$schema", "$defs", "title", "description"})
    if extra:
        raise UnsupportedSchemaError(f"#: unsupported top-level keywords {extra}")
    generator = _Generator(schema.get("$defs", {}), names or {})
    keys = sorted(generator.definitions, key=lambda key: generator.names[key])
    blocks = [generator.declaration(key) for key in keys]
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"


_HEADER = """\
// Generated from the protocol's JSON Schema (docs/protocol.schema.json) by
// backend/consentry/typescript_declarations.py. Do not edit: run `make schema`.
//
// {title}: {description}
"""

_EVENT_HELPERS = """
/** The `type` of every SSE event (also its SSE `event:` name). */
export type ConsentryEventType = ConsentryEvent["type"];

/** The event of one `type`: `ConsentryEventOf<"final">` is `FinalEvent`. */
export type ConsentryEventOf<T extends ConsentryEventType> = Extract<ConsentryEvent, { type: T }>;
"""

_EVENT_DOC = (
    "Every SSE event of a run: a union discriminated on `type`, which is also the SSE `event:` "
    "name;\n`seq` is the SSE `id:`. Narrow it with `switch (event.type)`."
)


def typescript_declarations() -> str:
    """The contents of ``backend/consentry/web/consentry-protocol.d.ts``: the protocol's `$defs` and
    event helpers.

    The schema's ``Event`` union is declared as ``ConsentryEvent`` (``Event`` is the DOM's)."""
    schema = json.loads(protocol_schema_json())
    schema["$defs"]["Event"] = {**schema["$defs"]["Event"], "description": _EVENT_DOC}
    header = _HEADER.format(title=schema["title"], description=schema["description"])
    body = schema_declarations(schema, names={"Event": "ConsentryEvent"})
    return f"{header}\n{body}{_EVENT_HELPERS}"


if __name__ == "__main__":
    print(typescript_declarations(), end="")
