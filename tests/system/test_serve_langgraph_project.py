"""An existing LangGraph project, served without edits: ``consentry serve --config
langgraph.json`` serves the graphs of its ``graphs`` map (a file path, imported with the
project's folder on ``sys.path``) with its ``env``; and the installed ``consentry`` script imports
``CONSENTRY_GRAPHS`` modules from the current directory. Real processes, real HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.sse import parse_events
from tests.system.server import NO_SAMPLE_NOTES, STARTUP_TIMEOUT_SECONDS, free_port

CONSENTRY = Path(sys.executable).with_name("consentry")
"""The installed script, which (unlike ``python -m``) does not put the current directory on
``sys.path`` by itself."""

GRAPH = """\
import os
from typing import Annotated
from uuid import uuid4

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from helpers import shout  # the project's own module, beside langgraph.json


class Input(TypedDict):
    name: str


class State(Input, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def greet(state: State) -> dict:
    text = f"{os.environ['GREETING_WORD']}, {shout(state['name'])}!"
    return {"messages": [AIMessage(text, id=f"msg-{uuid4().hex}")]}


builder = StateGraph(State, input_schema=Input)
builder.add_node(greet)
builder.add_edge(START, "greet")
builder.add_edge("greet", END)
graph = builder.compile()
"""


def _project(folder: Path) -> Path:
    """A LangGraph project as ``langgraph new`` lays one out: its graph under src/, a module of
    its own at the top, a .env file, and langgraph.json naming them."""
    (folder / "src" / "agent").mkdir(parents=True)
    (folder / "src" / "agent" / "graph.py").write_text(GRAPH, encoding="utf-8")
    (folder / "helpers.py").write_text("def shout(name):\n    return name.upper()\n", "utf-8")
    (folder / ".env").write_text("GREETING_WORD=Salut\n", encoding="utf-8")
    config = folder / "langgraph.json"
    config.write_text(
        json.dumps(
            {
                "dependencies": ["."],
                "graphs": {"agent": "./src/agent/graph.py:graph"},
                "env": ".env",
            }
        ),
        encoding="utf-8",
    )
    return config


@contextmanager
def _serving(args: Sequence[str], *, cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """``consentry serve`` (the installed script) run from ``cwd``; its base URL."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    environment = {k: v for k, v in os.environ.items() if k != "GREETING_WORD"}
    with subprocess.Popen(
        [str(CONSENTRY), "serve", "--port", str(port), "--log-level", "warning", *args],
        cwd=cwd,
        env={**environment, **NO_SAMPLE_NOTES, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    ) as process:
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
            while not _healthy(base_url):
                if process.poll() is not None:
                    output = process.stdout.read().decode() if process.stdout else ""
                    raise AssertionError(f"exited with {process.returncode}:\n{output}")
                assert time.monotonic() < deadline, "no healthy server in time"
                time.sleep(0.1)
            yield base_url
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)


def _healthy(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/healthz", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


def _said(base_url: str, body: dict[str, object]) -> list[str]:
    response = httpx.post(f"{base_url}/v1/chat", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return [e.content for e in parse_events(response.text) if e.type == "message"]  # type: ignore[union-attr]


def test_a_langgraph_project_is_served_from_its_langgraph_json(tmp_path: Path) -> None:
    config = _project(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    database = {"CONSENTRY_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"}

    with _serving(["--config", str(config)], cwd=elsewhere, env=database) as base_url:
        graphs = httpx.get(f"{base_url}/v1/graphs", timeout=10).json()["graphs"]
        said = _said(base_url, {"graph": "agent", "input": {"name": "ada"}})

    agent = next(g for g in graphs if g["name"] == "agent")
    assert agent["input_schema"]["properties"] == {"name": {"title": "Name", "type": "string"}}
    assert said == ["Salut, ADA!"]


def test_the_environment_wins_over_the_projects_env_file(tmp_path: Path) -> None:
    config = _project(tmp_path / "project")
    env = {"CONSENTRY_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}", "GREETING_WORD": "Olá"}

    with _serving(["--config", str(config)], cwd=tmp_path, env=env) as base_url:
        said = _said(base_url, {"graph": "agent", "input": {"name": "ada"}})

    assert said == ["Olá, ADA!"]


def test_the_installed_script_imports_graphs_from_the_current_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _project(project)
    (project / "myproj").mkdir()
    (project / "myproj" / "__init__.py").write_text("", encoding="utf-8")
    (project / "myproj" / "graph.py").write_text(GRAPH, encoding="utf-8")
    env = {
        "CONSENTRY_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}",
        "CONSENTRY_GRAPHS": "agent=myproj.graph:graph",
        "GREETING_WORD": "Hello",
    }

    with _serving([], cwd=project, env=env) as base_url:
        said = _said(base_url, {"graph": "agent", "input": {"name": "bob"}})

    assert said == ["Hello, BOB!"]


def test_a_config_file_that_cannot_be_served_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"graphs": ', encoding="utf-8")
    (tmp_path / "no_graphs.json").write_text('{"env": {}}', encoding="utf-8")
    env = {**os.environ, "CONSENTRY_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"}

    errors = [
        subprocess.run(
            [str(CONSENTRY), "serve", "--config", name],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=STARTUP_TIMEOUT_SECONDS,
            check=False,
        )
        for name in ("missing.json", "bad.json", "no_graphs.json")
    ]

    assert [e.returncode for e in errors] == [2, 2, 2]
    assert [e.stderr for e in errors] == [
        f"consentry: --config {tmp_path / 'missing.json'}: no such file\n",
        f"consentry: --config {tmp_path / 'bad.json'} is not JSON: Expecting value: line 1 "
        "column 12 (char 11)\n",
        f'consentry: --config {tmp_path / "no_graphs.json"} has no "graphs" object of names '
        'and paths, like {"graphs": {"agent": "./agent.py:graph"}}\n',
    ]
