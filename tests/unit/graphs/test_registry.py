"""CONSENTRY_GRAPHS: a deployment adds graphs by import path; the tutor is always served, and a
bad entry stops start-up with a message that names it."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest
import uvicorn
from pydantic import ValidationError

from consentry.cli import main
from consentry.settings import Settings
from consentry_graphs.examples.parallel_consents import graph_spec as parallel_spec
from consentry_graphs.registry import BUILTIN_GRAPHS, GraphLoadError, GraphSpec, load_graphs

PARALLEL = "consentry_graphs.examples.parallel_consents:graph_spec"
REFUND = "consentry_graphs.examples.refund_consent:graph_spec"


@pytest.fixture
def fake_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """An importable module ``consentry_test_graphs`` with factories good and bad."""
    module = ModuleType("consentry_test_graphs")

    def failing() -> GraphSpec:
        raise RuntimeError("no database for this graph")

    module.failing = failing
    module.not_a_spec = lambda: "tutor"
    module.not_callable = 42
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def _never_serve(*_: object, **__: object) -> None:
    raise AssertionError("the server must not start")


# settings


def test_graphs_setting_parses_names_and_import_paths() -> None:
    settings = Settings(graphs=f" parallel = {PARALLEL} , refund={REFUND},")

    assert settings.graphs == {"parallel": PARALLEL, "refund": REFUND}


def test_graphs_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSENTRY_GRAPHS", f"refund={REFUND}")

    assert Settings().graphs == {"refund": REFUND}


def test_graphs_setting_defaults_to_none_besides_the_builtins() -> None:
    assert Settings().graphs == {}
    assert list(load_graphs(Settings().graphs)) == ["tutor"]


@pytest.mark.parametrize(
    "raw",
    [
        "refund",
        f"={REFUND}",
        "refund=consentry_graphs.examples.refund_consent",
        "refund=consentry_graphs.examples.refund_consent:",
        "refund=graphs..examples:graph_spec",
        "refund=consentry_graphs.examples.refund_consent:graph_spec:extra",
        f"my graph={REFUND}",
        f"{'x' * 65}={REFUND}",
    ],
)
def test_malformed_graphs_entries_are_refused(raw: str) -> None:
    with pytest.raises(ValidationError, match=r"is not `name=package\.module:factory`"):
        Settings(graphs=raw)


def test_the_same_graph_name_twice_is_refused() -> None:
    with pytest.raises(ValidationError, match="names the graph 'refund' twice"):
        Settings(graphs=f"refund={REFUND},refund={PARALLEL}")


# load_graphs


def test_load_graphs_adds_each_entry_to_the_builtin_tutor() -> None:
    graphs = load_graphs({"parallel": PARALLEL, "refund": REFUND})

    assert list(graphs) == ["tutor", "parallel", "refund"]
    assert graphs["tutor"] is BUILTIN_GRAPHS["tutor"]
    assert set(graphs["parallel"].consent_kinds) == {"publish_post", "notify_team"}
    assert set(graphs["refund"].consent_kinds) == {"refund"}


def test_the_configured_name_is_the_graphs_name() -> None:
    graphs = load_graphs({"launch": PARALLEL})

    assert graphs["launch"].name == "launch"
    assert parallel_spec().name == "parallel_consents"
    assert graphs["launch"].consent_kinds == parallel_spec().consent_kinds


def test_the_example_graphs_are_not_builtin() -> None:
    assert list(BUILTIN_GRAPHS) == ["tutor"]
    assert set(BUILTIN_GRAPHS["tutor"].consent_kinds) == {
        "note_edit",
        "note_create",
        "note_delete",
    }


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_such_package.graphs:graph_spec", "cannot import module 'no_such_package.graphs'"),
        ("consentry_test_graphs:missing", "has no function 'missing'"),
        ("consentry_test_graphs:not_callable", "has no function 'not_callable'"),
        ("consentry_test_graphs:failing", "failing() failed: RuntimeError('no database"),
        (
            "consentry_test_graphs:not_a_spec",
            "not_a_spec() returned str, not a consentry_graphs.registry",
        ),
        ("consentry_test_graphs", "must look like `package.module:factory`"),
    ],
)
def test_a_graph_that_cannot_be_loaded_fails_with_a_message_naming_it(
    fake_module: ModuleType, path: str, message: str
) -> None:
    with pytest.raises(GraphLoadError) as raised:
        load_graphs({"custom": path})

    assert str(raised.value).startswith(f"CONSENTRY_GRAPHS: graph 'custom' ({path}): ")
    assert message in str(raised.value)


def test_a_graph_may_not_take_the_tutors_name() -> None:
    with pytest.raises(GraphLoadError, match="'tutor' is the name of a built-in graph"):
        load_graphs({"tutor": PARALLEL})


def test_serve_exits_with_a_clear_message_instead_of_starting_with_a_bad_graph(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONSENTRY_GRAPHS", "custom=no_such_package.graphs:graph_spec")
    monkeypatch.setattr(uvicorn, "run", _never_serve)

    assert main(["serve", "--port", "0"]) == 2

    assert capsys.readouterr().err == (
        "consentry: CONSENTRY_GRAPHS: graph 'custom' (no_such_package.graphs:graph_spec): "
        "cannot import module 'no_such_package.graphs': No module named 'no_such_package'\n"
    )
