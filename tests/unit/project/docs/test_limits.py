"""docs/limits.md is code: every limit setting is documented there, every setting it names exists,
its examples are valid error bodies, and its codes are in the protocol's errors table."""

from __future__ import annotations

import json
import re

from consentry.schemas.errors import ErrorBody
from consentry.settings import Settings
from tests.paths import DOCS

DOC = (DOCS / "limits.md").read_text(encoding="utf-8")
PROTOCOL = (DOCS / "protocol.md").read_text(encoding="utf-8")
LIMIT_SETTINGS = [
    name for name in Settings.model_fields if name.startswith(("max_", "rate_limit_"))
]


def test_every_limit_setting_is_documented_with_its_default() -> None:
    assert len(LIMIT_SETTINGS) >= 13
    for name in LIMIT_SETTINGS:
        assert f"`CONSENTRY_{name.upper()}`" in DOC, name
        default = Settings.model_fields[name].default
        assert f"`{default}`" in DOC or f"{default} a minute" in DOC, (name, default)


def test_every_setting_the_doc_names_exists() -> None:
    named = set(re.findall(r"CONSENTRY_([A-Z_]+)", DOC))
    assert {name.lower() for name in named} <= set(Settings.model_fields)


def test_the_examples_are_error_bodies_naming_a_setting() -> None:
    examples = [json.loads(b) for b in re.findall(r"```json\n(.*?)\n```", DOC, re.DOTALL)]
    assert len(examples) >= 4
    for example in examples:
        error = ErrorBody.model_validate(example).error
        assert error.details["limit"] in Settings.model_fields
        assert f"({error.details['limit']})" in error.message or error.code == "rate_limited"


def test_every_code_of_the_doc_is_in_the_protocol_errors_table() -> None:
    codes = set(re.findall(r"\d{3} `([a-z_]+)`", DOC))
    assert codes >= {
        "body_too_large",
        "limit_exceeded",
        "message_too_long",
        "rate_limited",
        "too_many_streams",
        "too_many_active_runs",
    }
    table = PROTOCOL.split("## Errors", 1)[1]
    for code in codes:
        assert f"| `{code}` |" in table, code


def test_the_readme_links_the_limits_doc() -> None:
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    assert "(docs/limits.md)" in readme
