"""What a client gives a run beside its input (:class:`RunOptions`): the graph's own runtime
``context`` (LangGraph's ``Runtime.context``, checked against the graph's ``context_schema``) and
``configurable`` values (``config["configurable"]``).

A thread keeps the options its client's last run gave (``threads.run_options``): a run started
with none (a decision from the inbox or ``/v1``, an expiry, a recovery, a resume from the SDK
without them) runs with them, so a consent is always answered under the configuration it was
asked under. Consentry's own services never take the context slot
(``consentry_graphs.services``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from consentry.errors import InvalidRequestError
from consentry.schemas.chat import Breakpoints
from consentry_graphs.graph_io import InputMismatchError
from consentry_graphs.registry import GraphSpec

__all__ = ["RESERVED_CONFIGURABLE", "RunOptions"]

RESERVED_CONFIGURABLE = frozenset({"thread_id", "checkpoint_id", "checkpoint_ns", "checkpoint_map"})
"""``configurable`` keys the server sets itself (with every key that starts with ``__``,
LangGraph's own): a client's are refused, never silently replaced."""


@dataclass(frozen=True)
class RunOptions:
    context: dict[str, Any] | None = None
    """The graph's runtime context as JSON (None: the graph gets none)."""
    configurable: Mapping[str, Any] = field(default_factory=dict)
    given: bool = False
    """Sent with this run (kept with the thread when it is claimed), not the thread's."""
    interrupt_before: Breakpoints = None
    interrupt_after: Breakpoints = None
    """The run's static breakpoints (the LangGraph SDK's): this run's only, never kept with
    the thread."""
    webhook: str | None = None
    """Where the run posts its record when it ends (the LangGraph SDK's ``webhook``, checked
    against ``CONSENTRY_WEBHOOK_HOSTS``): this run's only, never kept with the thread; stored on
    the run's row when it is claimed, so a worker or a takeover that ends it posts it too."""
    metadata: Mapping[str, Any] | None = None
    """The client's metadata on a run with a ``webhook``, stored with it at the claim (the
    record posted has it, however soon the run ends)."""

    @classmethod
    def stored(cls, value: Mapping[str, Any] | None) -> RunOptions:
        """The options a thread keeps (``threads.run_options``), or none."""
        if not value:
            return cls()
        return cls(context=value.get("context"), configurable=value.get("configurable") or {})

    @classmethod
    def for_thread(cls, spec: GraphSpec, value: Mapping[str, Any] | None) -> RunOptions:
        """What a run sent no options gets on a thread that keeps ``value``: those, and for a
        graph with a ``context_schema`` a context always (its defaults, when none is kept)."""
        kept = cls.stored(value)
        if kept.context is None and spec.io is not None and spec.io.context_check is not None:
            return cls.checked(spec, context=None, configurable=None, kept=kept)
        return kept

    def to_store(self) -> dict[str, Any]:
        return {"context": self.context, "configurable": dict(self.configurable)}

    @classmethod
    def checked(
        cls,
        spec: GraphSpec,
        *,
        context: Mapping[str, Any] | None,
        configurable: Mapping[str, Any] | None,
        kept: RunOptions,
    ) -> RunOptions:
        """The options a run on ``spec`` gets: those sent (checked: 422 ``invalid_context`` or
        ``invalid_config`` naming each field), else the thread's ``kept`` ones; a graph with a
        ``context_schema`` always gets a context (its defaults, when nobody gave one)."""
        if context is None and configurable is None:
            if kept.context is None and spec.io is not None and spec.io.context_check is not None:
                return RunOptions(context=_context(spec, None), configurable=kept.configurable)
            return kept
        _check_configurable(configurable or {})
        return RunOptions(
            context=_context(spec, context if context is not None else kept.context),
            configurable=dict(configurable) if configurable is not None else kept.configurable,
            given=True,
        )


def _context(spec: GraphSpec, value: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if spec.io is None:
        return None if value is None else dict(value)
    try:
        return spec.io.check_context(value)
    except InputMismatchError as exc:
        raise InvalidRequestError(
            f"The run's `context` does not fit the context schema of graph {spec.name!r}: {exc}.",
            code="invalid_context",
            details={
                "errors": [
                    {"loc": ["context", *problem.loc], "msg": problem.msg, "type": problem.type}
                    for problem in exc.problems
                ]
            },
        ) from None


def _check_configurable(configurable: Mapping[str, Any]) -> None:
    reserved = sorted(
        key for key in configurable if key in RESERVED_CONFIGURABLE or key.startswith("__")
    )
    if reserved:
        raise InvalidRequestError(
            f"`configurable` may not set {', '.join(map(repr, reserved))}: the server sets "
            "them (the thread and checkpoint come from the run's thread).",
            code="invalid_config",
            details={"errors": [{"loc": ["configurable", key]} for key in reserved]},
        )
