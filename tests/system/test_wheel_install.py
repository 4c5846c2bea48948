"""Consentry installed the way a user installs it: its wheel in a fresh virtual environment, the
dependencies from ``requirements/run.lock`` (as ``make run`` takes them), beside a project of the
user's own that has top-level ``backend`` and ``graphs`` packages, the generic names Consentry's
packages (``consentry``, ``consentry_graphs``) leave free. ``consentry serve`` serves one of that
project's graphs and a chat runs to its ``final`` event. The project is on ``PYTHONPATH``: the
``consentry`` script, unlike ``python -m``, does not put the working directory on ``sys.path``.

Needs pip and PyPI (marked ``network``): building the wheel fetches setuptools, and the venv gets
the locked dependencies (from pip's cache once ``make`` has installed them: about 30 s then).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.paths import ROOT
from tests.sse import parse_events
from tests.system.serve_cli import read_line

pytestmark = pytest.mark.network

INSTALL_TIMEOUT_SECONDS = 600.0
STARTED = "Consentry is serving "

USER_GRAPH = '''\
"""The user's graph: it says where the server imported its packages from."""

import json
import sys
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from backend.greeting import GREETING
from consentry_graphs.registry import GraphSpec


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    project_id: str
    note_id: str | None


def report_origins(state: State) -> dict[str, Any]:
    names = ("backend", "graphs", "consentry", "consentry_graphs")
    origins = {name: sys.modules[name].__file__ for name in names}
    content = json.dumps({"greeting": GREETING, "origins": origins})
    return {"messages": [AIMessage(content, id="origins-1")]}


def build(model: Any, checkpointer: Any) -> Any:
    graph = StateGraph(State)
    graph.add_node("report_origins", report_origins)
    graph.add_edge(START, "report_origins")
    graph.add_edge("report_origins", END)
    return graph.compile(checkpointer=checkpointer)


def graph_spec() -> GraphSpec:
    return GraphSpec(
        name="mine",
        build=build,
        step_labels={"report_origins": "Looking where things come from"},
        consent_kinds={},
    )
'''


def _run(*command: str | Path) -> None:
    done = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}{done.stderr}"


def _without_this_checkout(environ: dict[str, str]) -> dict[str, str]:
    """The environment less anything that would point Python at this checkout or its venv."""
    leaks = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
    return {k: v for k, v in environ.items() if k not in leaks and not k.startswith("CONSENTRY_")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Consentry's wheel, built from a copy of the source as a checkout has it, the development
    tools (``tools/``) included (an in-tree build leaves ``build/`` behind, whose stale files go
    into later wheels)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("backend", "graphs", "tools"):
        ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", work / "dist", source)
    (built,) = (work / "dist").glob("consentry-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path) -> Path:
    """A fresh venv with the locked dependencies and Consentry's wheel."""
    work = wheel.parent.parent
    venv = work / "venv"
    _run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "--quiet", "-r", ROOT / "requirements" / "run.lock")
    _run(python, "-m", "pip", "install", "--quiet", "--no-deps", wheel)
    _run(python, "-m", "pip", "check")  # the lock holds every dependency the wheel declares
    return venv


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project with its own ``backend`` and ``graphs`` packages."""
    project = tmp_path / "project"
    (project / "backend").mkdir(parents=True)
    (project / "backend" / "__init__.py").write_text('"""The user\'s backend."""\n')
    (project / "backend" / "greeting.py").write_text('GREETING = "hello from my backend"\n')
    (project / "graphs").mkdir()
    (project / "graphs" / "__init__.py").write_text('"""The user\'s graphs."""\n')
    (project / "graphs" / "mine.py").write_text(USER_GRAPH)
    return project


@pytest.fixture
def server(venv: Path, project: Path, tmp_path: Path) -> Iterator[str]:
    """``consentry serve`` from the venv, in the project's folder, serving the project's graph
    ``mine``; yields its URL."""
    env = {
        **_without_this_checkout(dict(os.environ)),
        "PYTHONPATH": str(project),  # the project is importable, as `CONSENTRY_GRAPHS` requires
        "CONSENTRY_DATABASE_URL": f"sqlite:///{project / 'c.db'}",
        "CONSENTRY_GRAPHS": "mine=graphs.mine:graph_spec",
        "CONSENTRY_SAMPLE_NOTES": "false",
    }
    log = tmp_path / "server.log"
    with (
        log.open("wb") as stderr,
        subprocess.Popen(  # leaving it closes the output pipe
            [venv / "bin" / "consentry", "serve", "--port", "0", "--log-level", "warning"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=stderr,
        ) as process,
    ):
        try:
            assert process.stdout is not None
            first = read_line(process.stdout.fileno()).decode()
            assert first.startswith(STARTED), first + log.read_text()
            yield first.removeprefix(STARTED).split()[0].rstrip("/")
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)


def test_a_users_graph_is_served_from_the_installed_wheel_beside_its_own_backend_and_graphs(
    server: str, venv: Path, project: Path
) -> None:
    with httpx.Client(base_url=server, timeout=60.0) as client:
        response = client.post("/v1/chat", json={"graph": "mine", "message": "Where from?"})
        page = client.get("/")

    assert response.status_code == 200, response.text
    site_packages = next((venv / "lib").glob("python3.*/site-packages"))
    said = {
        "greeting": "hello from my backend",
        "origins": {  # the user's names from the project, Consentry's from the wheel
            "backend": str(project / "backend" / "__init__.py"),
            "graphs": str(project / "graphs" / "__init__.py"),
            "consentry": str(site_packages / "consentry" / "__init__.py"),
            "consentry_graphs": str(site_packages / "consentry_graphs" / "__init__.py"),
        },
    }
    envelope = {"thread_id", "run_id", "seq", "ts"}
    assert [e.model_dump(mode="json", exclude=envelope) for e in parse_events(response.text)] == [
        {"type": "run_started", "graph": "mine", "trigger": "message"},
        {"type": "step", "node": "report_origins", "label": "Looking where things come from"},
        {
            "type": "message",
            "message_id": "origins-1",
            "role": "assistant",
            "content": json.dumps(said),
        },
        {"type": "final", "reason": "completed", "usage": {"input_tokens": 0, "output_tokens": 0}},
    ]
    # the web app's files are in the wheel too
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")


def test_the_wheel_carries_no_development_tools_and_their_commands_say_how_to_get_them(
    wheel: Path, venv: Path
) -> None:
    with zipfile.ZipFile(wheel) as archive:
        packages = {name.split("/")[0] for name in archive.namelist()}
        modules = archive.namelist()
    done = subprocess.run(
        [venv / "bin" / "consentry", "bench", "--concurrency", "1"],
        env=_without_this_checkout(dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert "consentry_tools" not in packages
    assert [m for m in modules if "/bench/" in m or "/chaos/" in m] == []
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "consentry bench is a development tool, not part of this installation: in a checkout "
        "of Consentry, `make test` installs it (or `pip install -e tools`)\n"
    )
