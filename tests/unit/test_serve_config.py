"""``consentry serve --config langgraph.json``: what is taken from a LangGraph project's file
(its graphs, with file paths made absolute from the file's folder, and its env), and the one
sentence a file that cannot be served gets."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from consentry.cli import main
from consentry.serve import ConfigError, ProjectConfig, read_config


def _config(folder: Path, content: Any, *, name: str = "langgraph.json") -> Path:
    path = folder / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")
    return path


@pytest.fixture(autouse=True)
def _own_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_graphs_are_read_with_file_paths_made_absolute_from_the_files_folder(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()
    path = _config(
        tmp_path / "sub",
        {
            "dependencies": ["."],
            "graphs": {
                "agent": "./src/agent/graph.py:graph",
                "other": {"path": "../other.py:make_graph", "description": "Another"},
                "packaged": "my_package.graphs:graph",
            },
        },
    )

    config = read_config(path)

    assert config == ProjectConfig(
        path=path,
        graphs={
            "agent": f"{tmp_path}/sub/src/agent/graph.py:graph",
            "other": f"{tmp_path}/other.py:make_graph",
            "packaged": "my_package.graphs:graph",
        },
        env={},
    )


def test_env_is_read_from_a_dotenv_file_beside_the_config_or_given_inline(
    tmp_path: Path,
) -> None:
    (tmp_path / ".env").write_text("# a comment\nA=1\nexport B='two words'\nEMPTY\n", "utf-8")
    from_file = _config(tmp_path, {"graphs": {}, "env": ".env"})
    inline = _config(tmp_path, {"graphs": {}, "env": {"A": "1", "N": 2}}, name="inline.json")

    assert read_config(from_file).env == {"A": "1", "B": "two words"}
    assert read_config(inline).env == {"A": "1", "N": "2"}


def test_using_a_config_puts_its_folder_first_on_sys_path_and_keeps_set_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONSENTRY_TEST_KEPT", "mine")
    monkeypatch.delenv("CONSENTRY_TEST_ADDED", raising=False)
    config = ProjectConfig(
        path=tmp_path / "langgraph.json",
        graphs={},
        env={"CONSENTRY_TEST_KEPT": "theirs", "CONSENTRY_TEST_ADDED": "theirs"},
    )

    config.use()

    assert sys.path[0] == str(tmp_path)
    assert os.environ["CONSENTRY_TEST_KEPT"] == "mine"
    assert os.environ.pop("CONSENTRY_TEST_ADDED") == "theirs"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "is not JSON: Expecting property name enclosed in double quotes"),
        ("[]", 'has no "graphs" object of names and paths'),
        ({"graphs": ["./a.py:graph"]}, 'has no "graphs" object of names and paths'),
        ({"graphs": {"agent": 3}}, "graph 'agent' needs a path like ./agent.py:graph"),
        ({"graphs": {"agent": "./agent.py"}}, "graph 'agent' needs a path like ./agent.py:graph"),
        ({"graphs": {"agent": {"file": "./a.py:g"}}}, "graph 'agent' needs a path like"),
        ({"graphs": {}, "env": "missing.env"}, "its env file"),
        ({"graphs": {}, "env": ["A=1"]}, '"env" is a .env file\'s path or an object of names'),
        ({"graphs": {}, "env": {"A": {"nested": 1}}}, '"env" is a .env file\'s path'),
    ],
)
def test_a_config_that_cannot_be_served_says_what_is_wrong(
    tmp_path: Path, content: Any, message: str
) -> None:
    path = _config(tmp_path, content)

    with pytest.raises(ConfigError) as raised:
        read_config(path)

    assert str(raised.value).startswith(f"--config {path}")
    assert message in str(raised.value)


def test_serve_names_a_graph_both_the_config_and_the_environment_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, {"graphs": {"words": "consentry_graphs.examples.word_count:graph"}})
    monkeypatch.setenv("CONSENTRY_GRAPHS", "words=consentry_graphs.examples.word_count:builder")

    assert main(["serve", "--config", str(path)]) == 2

    assert capsys.readouterr().err == (
        f"consentry: CONSENTRY_GRAPHS and {path} both name the graph 'words'; keep one\n"
    )


def test_serve_refuses_a_bad_graph_of_the_config_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, {"graphs": {"agent": "./agent.py:graph"}})

    assert main(["serve", "--config", str(path)]) == 2

    assert capsys.readouterr().err == (
        f"consentry: CONSENTRY_GRAPHS: graph 'agent' ({tmp_path}/agent.py:graph): no file "
        f"'{tmp_path}/agent.py'\n"
    )
