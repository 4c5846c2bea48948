"""docs/graphs.md is code: its LangGraph project (langgraph.json, the graph file, the .env) is
served as the page says, its JSON examples are what the server answers, and its start-up error
is the line `consentry serve` prints."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from langgraph.checkpoint.memory import InMemorySaver

from consentry.cli import main
from consentry.schemas.errors import ErrorBody
from consentry.serve import read_config
from consentry_graphs.models.offline import OfflineChatModel
from consentry_graphs.registry import build_graphs, load_graphs
from tests.paths import DOCS

DOC = (DOCS / "graphs.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^ *```{language}\n(.*?)\n *```", DOC, re.DOTALL | re.MULTILINE)


@pytest.fixture(autouse=True)
def _own_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))


def _project(folder: Path) -> Path:
    langgraph_json, *_ = _blocks("json")
    graph_file, *_ = _blocks("python")  # the first: the project's graph
    (folder / "src" / "agent").mkdir(parents=True)
    (folder / "src" / "agent" / "graph.py").write_text(graph_file, encoding="utf-8")
    (folder / ".env").write_text("GREETING=Salut\n", encoding="utf-8")
    config = folder / "langgraph.json"
    config.write_text(langgraph_json, encoding="utf-8")
    return config


def test_the_pages_project_is_served_as_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GREETING", raising=False)
    config = read_config(_project(tmp_path))
    config.use()

    specs, compiled = build_graphs(load_graphs(config.graphs), OfflineChatModel(), InMemorySaver())
    io = specs["agent"].io
    assert io is not None
    state = compiled["agent"].invoke(
        io.check_input({"name": "Ada"}), {"configurable": {"thread_id": "t"}}
    )

    assert state["messages"][-1].content == "Salut, Ada!"
    assert specs["agent"].label_for("greet") == "Greet"
    listed: dict[str, Any] = json.loads(_blocks("json")[1])["graphs"][0]
    assert listed["input_schema"] == io.input_schema
    assert listed["accepts_message"] is io.takes("messages")


def test_the_invalid_input_example_is_an_error_body() -> None:
    example = json.loads(_blocks("json")[2])

    assert ErrorBody.model_validate(example).error.code == "invalid_input"


def test_the_start_up_error_is_the_line_serve_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    said = next(b for b in _blocks("text") if "CONSENTRY_GRAPHS: graph 'agent'" in b)
    monkeypatch.setenv("CONSENTRY_GRAPHS", "agent=myproject.graph:graph")
    monkeypatch.setattr(uvicorn, "run", lambda *_, **__: None)

    assert main(["serve"]) == 2

    assert capsys.readouterr().err == f"{said}\n"
