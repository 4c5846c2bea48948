"""What a process loads before it does anything: the server does not load a model provider's
SDK until a model server is configured, and the terminal client does not load LangGraph."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _loaded_after(statement: str, modules: list[str]) -> dict[str, bool]:
    """Which of ``modules`` a fresh interpreter holds after ``statement``."""
    report = f"print(json.dumps({{m: m in sys.modules for m in {modules!r}}}))"
    code = f"import json, sys\n{statement}\n{report}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded: dict[str, bool] = json.loads(out.stdout.splitlines()[-1])
    return loaded


def test_the_server_app_loads_no_model_provider_sdk() -> None:
    assert _loaded_after("import consentry.app", ["openai", "langchain_openai"]) == {
        "openai": False,
        "langchain_openai": False,
    }


@pytest.mark.parametrize(
    "statement",
    [
        "import consentry.terminal.commands",
        "import consentry.schemas.events, consentry.schemas.approvals",
    ],
)
def test_the_wire_models_and_the_terminal_client_load_no_langgraph(statement: str) -> None:
    assert _loaded_after(statement, ["langgraph", "openai"]) == {
        "langgraph": False,
        "openai": False,
    }
