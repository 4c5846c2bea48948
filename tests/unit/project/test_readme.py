"""Cheap checks that keep the README's claims true: every setting is in its configuration table,
and the curl example has as many requests as the sentence before it says."""

from __future__ import annotations

import re

from pydantic import AliasChoices

from consentry.settings import Settings
from tests.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def _configuration_table() -> str:
    return README.split("## Configuration", 1)[1].split("\n## ", 1)[0]


def _environment_names(name: str) -> list[str]:
    """The variables a setting is read from (any of them documents it)."""
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    return [f"CONSENTRY_{name.upper()}"]


def test_every_setting_is_in_the_readme_configuration_table() -> None:
    table = _configuration_table()
    documented = set(re.findall(r"`((?:CONSENTRY|OTEL|OPENAI)_[A-Z0-9_]+)`", table))

    missing = [
        _environment_names(name)[0]
        for name, field in Settings.model_fields.items()
        if not field.exclude and not set(_environment_names(name)) & documented
    ]

    assert missing == [], "add these to the README's configuration table"


def test_the_curl_example_has_as_many_requests_as_the_readme_says() -> None:
    said = re.search(r"Its core is\s+(\w+)\s+requests:\s*```bash\n(.*?)```", README, re.DOTALL)
    assert said is not None, "the sentence before the curl example moved"

    requests = [line for line in said.group(2).splitlines() if line.startswith("curl ")]

    assert NUMBERS[said.group(1)] == len(requests)
