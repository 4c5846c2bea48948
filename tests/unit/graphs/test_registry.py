"""CONSENTRY_GRAPHS: a deployment adds graphs by import path or file path, each a compiled graph,
a StateGraph builder, a factory (of no arguments, or of the server's model and checkpointer) or
a GraphSpec; the tutor is always served; the server's checkpointer replaces the graph's own; and
a bad entry stops start-up with a message that names it and the cause."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import ValidationError

from consentry.cli import main
from consentry.settings import Settings
from consentry_graphs.examples import word_count
from consentry_graphs.examples.parallel_consents import graph_spec as parallel_spec
from consentry_graphs.models.offline import OfflineChatModel
from consentry_graphs.registry import (
    BUILTIN_GRAPHS,
    GraphLoadError,
    GraphSpec,
    build_graphs,
    load_graphs,
)
from tests import graph_forms

PARALLEL = "consentry_graphs.examples.parallel_consents:graph_spec"
REFUND = "consentry_graphs.examples.refund_consent:graph_spec"
FORMS = "tests.graph_forms"
CONFIG = {"configurable": {"thread_id": "t1"}}


@pytest.fixture(autouse=True)
def _own_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``consentry serve`` puts folders on ``sys.path``: not on the test process's for good."""
    monkeypatch.setattr(sys, "path", list(sys.path))


@pytest.fixture
def saver() -> InMemorySaver:
    return InMemorySaver()


@pytest.fixture
def model() -> OfflineChatModel:
    return OfflineChatModel()


def _never_serve(*_: object, **__: object) -> None:
    raise AssertionError("the server must not start")


def _built(path: str, model: OfflineChatModel, saver: InMemorySaver) -> Any:
    specs, compiled = build_graphs(load_graphs({"words": path}), model, saver)
    return specs["words"], compiled["words"]


# settings


def test_graphs_setting_parses_names_and_import_paths() -> None:
    settings = Settings(graphs=f" parallel = {PARALLEL} , refund={REFUND}, agent=./src/a.py:graph,")

    assert settings.graphs == {"parallel": PARALLEL, "refund": REFUND, "agent": "./src/a.py:graph"}


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
        "agent=./src/agent.txt:graph",
        "agent=./src/agent.py",
        f"my graph={REFUND}",
        f"{'x' * 65}={REFUND}",
    ],
)
def test_malformed_graphs_entries_are_refused(raw: str) -> None:
    with pytest.raises(
        ValidationError,
        match=r"is not `name=package\.module:attr` or `name=path/to/file\.py:attr`",
    ):
        Settings(graphs=raw)


def test_the_same_graph_name_twice_is_refused() -> None:
    with pytest.raises(ValidationError, match="names the graph 'refund' twice"):
        Settings(graphs=f"refund={REFUND},refund={PARALLEL}")


# load_graphs: graph specs


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


# load_graphs: any LangGraph graph


@pytest.mark.parametrize(
    "path",
    [
        "consentry_graphs.examples.word_count:graph",  # a compiled graph
        "consentry_graphs.examples.word_count:builder",  # a StateGraph builder
        f"{FORMS}:compiled_graph",  # a factory returning a compiled graph
        f"{FORMS}:state_graph",  # a factory returning a builder
        f"{FORMS}:build_with_model",  # a factory of (model, checkpointer)
        f"{FORMS}:graph_spec",  # a factory returning a GraphSpec
    ],
)
def test_every_form_of_graph_is_served_with_the_servers_checkpointer(
    path: str, model: OfflineChatModel, saver: InMemorySaver
) -> None:
    spec, graph = _built(path, model, saver)

    assert spec.name == "words"
    assert spec.consent_kinds == {}
    assert graph.checkpointer is saver
    assert graph.invoke({"text": "one two three"}, CONFIG)["words"] == 3
    assert saver.get_tuple(CONFIG) is not None, "the state is kept in the server's checkpointer"


def test_a_compiled_graph_is_copied_not_changed(saver: InMemorySaver) -> None:
    _, graph = _built("consentry_graphs.examples.word_count:graph", OfflineChatModel(), saver)

    assert graph is not word_count.graph
    assert word_count.graph.checkpointer is None
    assert graph.builder is word_count.builder


def test_a_compiled_graph_keeps_its_interrupts_before_nodes(saver: InMemorySaver) -> None:
    _, graph = _built(f"{FORMS}:interrupting_graph", OfflineChatModel(), saver)

    graph.invoke({"text": "one two"}, CONFIG)

    assert graph.interrupt_before_nodes == ["count_words"]
    assert graph.get_state(CONFIG).next == ("count_words",)


def test_a_factory_of_model_and_checkpointer_gets_the_servers_at_build_time_only(
    model: OfflineChatModel, saver: InMemorySaver
) -> None:
    before = len(graph_forms.BUILT_WITH)
    specs = load_graphs({"words": f"{FORMS}:build_with_model"})
    assert len(graph_forms.BUILT_WITH) == before, "loading does not build"

    build_graphs(specs, model, saver)

    assert graph_forms.BUILT_WITH[before:] == [(model, saver)]


def test_a_plain_graphs_steps_are_labelled_from_its_node_names() -> None:
    plain = load_graphs({"words": "consentry_graphs.examples.word_count:graph"})["words"]
    spec = load_graphs({"words": f"{FORMS}:graph_spec"})["words"]

    assert plain.label_for("count_words") == "Count words"
    assert spec.label_for("count_words") == "Counting your words"
    # a middleware's hook (LangChain's create_agent), its name kept as written
    assert plain.label_for("HumanInTheLoopMiddleware.after_model") == (
        "After model (HumanInTheLoopMiddleware)"
    )
    assert plain.label_for("callModel") == "CallModel"


def test_a_graph_file_is_imported_once_from_its_path(
    tmp_path: Path, model: OfflineChatModel, saver: InMemorySaver
) -> None:
    (tmp_path / "agent.py").write_text(
        "from pathlib import Path\n"
        "from consentry_graphs.examples.word_count import builder\n"
        "imports = Path(__file__).with_name('imports.txt')\n"
        "before = imports.read_text() if imports.exists() else ''\n"
        "imports.write_text(before + 'imported ')\n"
        "graph = builder.compile()\n",
        encoding="utf-8",
    )

    first = load_graphs({"agent": f"{tmp_path}/agent.py:graph"})
    second = load_graphs({"again": f"{tmp_path}/./agent.py:graph"})
    _, graph = _built(f"{tmp_path}/agent.py:graph", model, saver)

    assert (tmp_path / "imports.txt").read_text() == "imported "
    assert set(first) == {"tutor", "agent"}
    assert set(second) == {"tutor", "again"}
    assert graph.invoke({"text": "a b"}, CONFIG)["words"] == 2


# load_graphs: bad entries


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_such_package.graphs:graph_spec", "cannot import module 'no_such_package.graphs'"),
        (f"{FORMS}:missing", "module 'tests.graph_forms' has no attribute 'missing'"),
        (
            f"{FORMS}:not_a_graph",
            "'not_a_graph' is of type int: name a compiled graph, a StateGraph, a GraphSpec, or a "
            "function returning one",
        ),
        (f"{FORMS}:fails", "fails() failed: RuntimeError('no database for this graph')"),
        (
            f"{FORMS}:returns_text",
            "returns_text() returned str, not a compiled graph, a StateGraph or a "
            "consentry_graphs.registry.GraphSpec",
        ),
        (
            f"{FORMS}:takes_three",
            "takes_three() takes model, checkpointer, store: a graph factory takes no "
            "arguments, or (model, checkpointer)",
        ),
        (f"{FORMS}:takes_config", "takes_config() takes config: a graph factory takes no"),
        (
            f"{FORMS}:no_entry_point",
            "no_entry_point cannot be compiled: Graph must have an entrypoint",
        ),
        (FORMS, "must look like `package.module:attr` or `path/to/file.py:attr`"),
    ],
)
def test_a_graph_that_cannot_be_loaded_fails_with_a_message_naming_it(
    path: str, message: str
) -> None:
    with pytest.raises(GraphLoadError) as raised:
        load_graphs({"custom": path})

    assert str(raised.value).startswith(f"CONSENTRY_GRAPHS: graph 'custom' ({path}): ")
    assert message in str(raised.value)


def test_a_graph_file_that_is_missing_or_fails_to_import_is_named(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import no_such_dependency\n", encoding="utf-8")

    with pytest.raises(GraphLoadError, match=r"no file '.*/missing\.py'"):
        load_graphs({"custom": f"{tmp_path}/missing.py:graph"})
    with pytest.raises(GraphLoadError) as raised:
        load_graphs({"custom": f"{tmp_path}/broken.py:graph"})

    assert str(raised.value) == (
        f"CONSENTRY_GRAPHS: graph 'custom' ({tmp_path}/broken.py:graph): cannot import file "
        f"'{tmp_path}/broken.py': ModuleNotFoundError(\"No module named 'no_such_dependency'\")"
    )


@pytest.mark.parametrize(
    ("attr", "message"),
    [
        (
            "builds_text",
            "builds_text(model, checkpointer) returned str, not a compiled graph or a StateGraph",
        ),
        (
            "build_fails",
            "build_fails(model, checkpointer) failed: RuntimeError('the model server is down')",
        ),
    ],
)
def test_a_factory_of_model_and_checkpointer_that_fails_stops_the_build_naming_it(
    attr: str, message: str, model: OfflineChatModel, saver: InMemorySaver
) -> None:
    specs = load_graphs({"custom": f"{FORMS}:{attr}"})

    with pytest.raises(GraphLoadError) as raised:
        build_graphs(specs, model, saver)

    assert str(raised.value) == f"CONSENTRY_GRAPHS: graph 'custom' ({FORMS}:{attr}): {message}"


def test_a_graph_may_not_take_the_tutors_name() -> None:
    with pytest.raises(GraphLoadError, match="'tutor' is the name of a built-in graph"):
        load_graphs({"tutor": PARALLEL})


# build_graphs: what each graph takes and gives


def test_each_built_graph_is_described_once_with_its_schemas(
    model: OfflineChatModel, saver: InMemorySaver
) -> None:
    specs, _ = build_graphs(
        load_graphs({"words": "consentry_graphs.examples.word_count:graph"}), model, saver
    )

    words, tutor = specs["words"].io, specs["tutor"].io
    assert words is not None
    assert tutor is not None
    assert words.input_schema is not None
    assert words.output_schema is not None
    assert (words.input_schema["required"], set(words.input_schema["properties"])) == (
        ["text"],
        {"text", "min_length"},
    )
    assert set(words.output_schema["properties"]) == {"words"}
    assert words.state_schema is not None
    assert set(words.state_schema["properties"]) == {"text", "min_length", "words", "messages"}
    assert (words.input_fields, words.message_fields) == ({"text", "min_length"}, set())
    # The tutor's state is a typing.TypedDict: described field by field from its channels.
    assert tutor.input_schema is not None
    assert tutor.input_schema["title"] == "TutorInput"
    assert set(tutor.input_schema["properties"]) == {"messages", "project_id", "note_id"}
    assert tutor.message_fields == {"messages"}
    assert tutor.unavailable == ()


def test_a_graph_pydantic_cannot_describe_is_served_with_its_schemas_unavailable(
    model: OfflineChatModel, saver: InMemorySaver, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="consentry_graphs.registry"):
        specs, compiled = build_graphs(
            load_graphs({"opaque": f"{FORMS}:opaque_field"}), model, saver
        )

    io = specs["opaque"].io
    assert io is not None
    assert (io.input_schema, io.state_schema, io.output_schema) == (None, None, None)
    assert io.input_fields == {"label", "thing"}
    assert io.check_input({"label": "x", "thing": {"any": "value"}}) == {
        "label": "x",
        "thing": {"any": "value"},
    }, "a field pydantic cannot check goes unchecked"
    logged = [r.getMessage() for r in caplog.records]
    assert [line.split(": ")[:2] for line in logged] == [
        ["graph 'opaque'", "no input schema"],
        ["graph 'opaque'", "no state schema"],
        ["graph 'opaque'", "no output schema"],
        ["graph 'opaque'", "input field 'thing' not checked"],
    ]
    assert compiled["opaque"].invoke({"label": "x"}, CONFIG) == {"label": "x"}


def test_a_typing_typeddict_state_is_described_from_its_channels(
    model: OfflineChatModel, saver: InMemorySaver
) -> None:
    specs, _ = build_graphs(load_graphs({"typing": f"{FORMS}:plain_typing_state"}), model, saver)

    io = specs["typing"].io
    assert io is not None
    assert io.input_schema is not None
    assert io.input_schema["properties"] == {
        "topic": {"title": "Topic", "type": "string"},
        "notes": {"items": {"type": "string"}, "title": "Notes", "type": "array"},
    }
    assert "required" not in io.input_schema


def test_a_graph_that_cannot_be_built_is_named(saver: InMemorySaver) -> None:
    def broken(*_: Any) -> Any:
        raise RuntimeError("boom")

    specs = {"custom": GraphSpec(name="custom", build=broken, step_labels={}, consent_kinds={})}

    with pytest.raises(GraphLoadError, match=r"graph 'custom' cannot be built: RuntimeError"):
        build_graphs(specs, OfflineChatModel(), saver)


def test_every_served_example_graph_declares_the_kinds_its_nodes_use(saver: InMemorySaver) -> None:
    specs = load_graphs(
        {
            "refund": "consentry_graphs.examples.refund_consent:graph_spec",
            "parallel": "consentry_graphs.examples.parallel_consents:graph_spec",
        }
    )

    built, _ = build_graphs(specs, OfflineChatModel(), saver)

    assert sorted(built) == ["parallel", "refund", "tutor"]


@pytest.mark.parametrize(
    ("graph", "problem"),
    [
        (
            "visible",
            "graph 'visible': node 'request_refund_consent' uses the consent kind 'refund', "
            "which the graph does not declare; add {'refund': <its ConsentKind>} to its "
            "GraphSpec's consent_kinds (docs/consent-kit.md)",
        ),
        (
            "misnamed",
            "graph 'misnamed': consent_kinds names the kind 'refund' 'refunds'; declare each "
            "kind under its own name ({'refund': ...})",
        ),
    ],
)
def test_a_graph_whose_nodes_use_a_kind_it_does_not_declare_is_refused_at_start_up(
    saver: InMemorySaver, graph: str, problem: str
) -> None:
    specs = load_graphs({graph: f"tests.integration.undeclared_kind_graphs:{graph}"})

    with pytest.raises(GraphLoadError) as refused:
        build_graphs(specs, OfflineChatModel(), saver)

    assert str(refused.value) == problem


def test_a_kind_asked_from_another_module_is_left_to_the_run_to_find(
    saver: InMemorySaver,
) -> None:
    specs = load_graphs({"hidden": "tests.integration.undeclared_kind_graphs:hidden"})

    built, _ = build_graphs(specs, OfflineChatModel(), saver)

    assert built["hidden"].consent_kinds == {}


# consentry serve


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


def test_serve_imports_graphs_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The installed ``consentry`` script does not put the current directory on ``sys.path``;
    ``serve`` does, as ``python -m`` would (here the module loads, and the missing attribute
    is what stops start-up)."""
    (tmp_path / "my_project_graphs.py").write_text("graph = None\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "my_project_graphs", raising=False)
    monkeypatch.setenv("CONSENTRY_GRAPHS", "mine=my_project_graphs:graph")

    assert main(["serve", "--port", "0"]) == 2

    assert capsys.readouterr().err == (
        "consentry: CONSENTRY_GRAPHS: graph 'mine' (my_project_graphs:graph): 'graph' is of "
        "type NoneType: name a compiled graph, a StateGraph, a GraphSpec, or a function returning "
        "one\n"
    )
    assert sys.path[0] == str(tmp_path)
