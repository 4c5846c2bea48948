"""The package's metadata: an SPDX license for the setuptools that reads it, dependency ranges
from a tested oldest release to the next major, and lock files that hold what the ranges ask
for (``make run`` and ``make test`` install from them)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.paths import ROOT

PYPROJECT = ROOT / "pyproject.toml"
RUN_LOCK = ROOT / "requirements" / "run.lock"
DEV_LOCK = ROOT / "requirements" / "dev.lock"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)", re.MULTILINE)
DEV_ONLY = {"pytest", "ruff", "mypy", "playwright", "deno", "schemathesis"}


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    return project


def _requirements(*extras: str) -> list[Requirement]:
    project = _project()
    lines = [*project["dependencies"]]
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    return [r for r in map(Requirement, lines) if r.name != "consentry"]


def _name(requirement: Requirement) -> str:
    return canonicalize_name(requirement.name)


def _pins(lock: str) -> dict[str, set[str]]:
    """Name → the versions a lock pins (a universal lock may pin two, for two Pythons)."""
    pins: dict[str, set[str]] = {}
    for match in PIN.finditer(lock):
        pins.setdefault(canonicalize_name(match["name"]), set()).add(match["version"])
    return pins


def test_the_license_is_an_spdx_expression_for_a_setuptools_that_reads_it() -> None:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))

    assert config["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in config["build-system"]["requires"]


@pytest.mark.parametrize("requirement", _requirements("otel", "dev"), ids=str)
def test_every_range_runs_from_an_oldest_release_to_the_major_after_the_tested_one(
    requirement: Requirement,
) -> None:
    bounds = {spec.operator: Version(spec.version) for spec in requirement.specifier}
    pinned = _pins(DEV_LOCK.read_text(encoding="utf-8")).get(_name(requirement))
    assert pinned, "not in the lock: run `make lock`"
    tested = max(map(Version, pinned))

    assert set(bounds) == {">=", "<"}
    assert bounds[">="] <= tested < bounds["<"] == Version(f"{tested.major + 1}")


@pytest.mark.parametrize(
    ("lock", "extras"), [(RUN_LOCK, ()), (DEV_LOCK, ("otel", "dev"))], ids=["run", "dev"]
)
def test_each_lock_pins_every_dependency_inside_its_range(
    lock: Path, extras: tuple[str, ...]
) -> None:
    pins = _pins(lock.read_text(encoding="utf-8"))

    outside = {
        str(r): sorted(pins.get(_name(r), ()))
        for r in _requirements(*extras)
        if not pins.get(_name(r)) or not all(map(r.specifier.contains, pins[_name(r)]))
    }
    assert outside == {}, "pyproject.toml changed since the lock: run `make lock`"


def test_the_run_lock_is_the_dev_lock_without_the_dev_tools() -> None:
    run = _pins(RUN_LOCK.read_text(encoding="utf-8"))
    dev = _pins(DEV_LOCK.read_text(encoding="utf-8"))

    assert {name: run[name] for name in run} == {name: dev.get(name) for name in run}
    assert set(dev) >= DEV_ONLY
    assert DEV_ONLY.isdisjoint(run)


def test_every_pin_carries_hashes_so_pip_installs_the_tested_files() -> None:
    for lock in (RUN_LOCK, DEV_LOCK):
        text = lock.read_text(encoding="utf-8")
        pinned = len(PIN.findall(text))
        assert pinned > 0
        assert len(re.findall(r"^\S+==[^\n]*\\\n\s+--hash=sha256:", text, re.MULTILINE)) == pinned
