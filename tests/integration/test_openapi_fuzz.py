"""Schemathesis fuzzes every operation of the OpenAPI document and finds no server error and no
answer that differs from the document.

The app runs in-process (schemathesis's ASGI transport starts its lifespan at the first request,
and its pytest plugin ends it with the test) on a real SQLite file, a fresh one per test, with the
offline model and an API key. Two tests:

- every operation: the coverage cases (boundary values, missing and wrong-typed parameters,
  undeclared methods) and ``CONSENTRY_FUZZ_EXAMPLES`` (10) random cases, valid and invalid;
- workflows: chains of up to 6 calls along the links schemathesis infers between operations (a
  created project's id into its notes, a note's id into its update, versions and delete...).

Every built-in check is on: not_a_server_error, status_code_conformance, content_type_conformance,
response_headers_conformance, response_schema_conformance (each event of a stream too),
negative_data_rejection, positive_data_acceptance, missing_required_header, unsupported_method,
allow_header_conformance, use_after_free, ensure_resource_availability, ignored_auth (the same
request without the key, and with a wrong one, gets 401) and object_level_authorization (idle: it
needs a second identity; owners are kept apart by tests/integration/test_owner_isolation.py). One
is narrowed, in tests/openapi_fuzz.toml: positive_data_acceptance also accepts 422, the answer to
a well-formed request that breaks a rule of the product (``unknown_graph``...), and on the
thread's stream 400, the answer to a ``Last-Event-ID`` past its last event. Two checks of our
own (tests/openapi_fuzz_checks.py): such a 422 is never ``request_invalid``, and every stream ends
on its own with ``final``.

The run is deterministic (a fixed seed, derandomized Hypothesis, no example database): it fails the
same way every time. SQLite only: the fuzzer tries the HTTP surface, the same on both databases
(their differences have their own tests), and PostgreSQL would double the time. The deeper,
randomized run for release checks: docs/release-checks.md.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

import tests.openapi_fuzz_checks  # noqa: F401  (registers Consentry's checks)
from consentry.app import create_app
from consentry.settings import Settings

SHARED_CONFIG = Path(__file__).parents[1] / "openapi_fuzz.toml"
API_KEY = "fuzz-key"
EXAMPLES = int(os.environ.get("CONSENTRY_FUZZ_EXAMPLES", "10"))
SEED = os.environ.get("CONSENTRY_FUZZ_SEED")
"""Unset: a fixed seed and derandomized generation. Set: a random run that this seed repeats."""
WORKFLOW_STEPS = 6


def _settings(database_url: str) -> Settings:
    """Settings of this module only, never from the developer's shell (as in tests/conftest.py)."""
    with pytest.MonkeyPatch.context() as env:
        for name in list(os.environ):
            if name.startswith("CONSENTRY_") or name == "OPENAI_API_KEY":
                env.delenv(name)
        return Settings(
            database_url=database_url,
            api_keys=f"{API_KEY}=acme:alice",
            # Off (0): a fuzz run sends hundreds of requests as one principal, and each 429 (as
            # documented as it is) is a case that tried nothing else. The limits have their own
            # tests (test_rate_limits.py, test_stream_and_run_caps.py).
            rate_limit_messages_per_minute=0,
            rate_limit_decisions_per_minute=0,
            max_streams_per_principal=0,
            max_active_runs_per_tenant=0,
        )


def _config() -> schemathesis.Config:
    shared: dict[str, Any] = tomllib.loads(SHARED_CONFIG.read_text(encoding="utf-8"))
    return schemathesis.Config.from_dict(
        {
            **shared,
            "seed": 9 if SEED is None else int(SEED),
            "generation": {
                **shared["generation"],
                "mode": "all",
                "max-examples": EXAMPLES,
                "deterministic": SEED is None,
            },
            "auth": {"openapi": {"HTTPBearer": {"bearer": API_KEY}}},
        }
    )


class _AppUnderTest:
    """The ASGI app schemathesis calls: the app of the running test (``consentry_app``).

    Schemathesis takes its app when it collects the tests, before any test has a database."""

    def __init__(self) -> None:
        self.app: FastAPI | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.app is not None, "only a test that uses the consentry_app fixture calls it"
        await self.app(scope, receive, send)


APP_UNDER_TEST = _AppUnderTest()
# The document does not depend on the settings: it comes from an app that never starts.
schema = schemathesis.openapi.from_dict(
    create_app(_settings("sqlite:///unused.db")).openapi(), config=_config()
)
schema.app = APP_UNDER_TEST


@pytest.fixture
def consentry_app(tmp_path: Path) -> Iterator[FastAPI]:
    APP_UNDER_TEST.app = create_app(_settings(f"sqlite:///{tmp_path / 'consentry.db'}"))
    try:
        yield APP_UNDER_TEST.app
    finally:
        APP_UNDER_TEST.app = None


@pytest.mark.usefixtures("consentry_app")
@schema.parametrize()
def test_every_operation_answers_as_documented(case: schemathesis.Case) -> None:
    case.call_and_validate()


@pytest.mark.usefixtures("consentry_app")
def test_workflows_along_inferred_links_answer_as_documented() -> None:
    workflows = schema.as_state_machine()
    if SEED is not None:
        workflows = hypothesis.seed(int(SEED))(workflows)
    workflows.run(
        settings=hypothesis.settings(
            max_examples=EXAMPLES,
            stateful_step_count=WORKFLOW_STEPS,
            derandomize=SEED is None,
            database=None,
            deadline=None,
        )
    )
