"""The package's metadata installs without setuptools' deprecation warnings: the license is an
SPDX expression (a TOML table is deprecated since setuptools 77, which reads the string)."""

from __future__ import annotations

import tomllib

from tests.paths import ROOT

PYPROJECT = ROOT / "pyproject.toml"


def test_the_license_is_an_spdx_expression_for_a_setuptools_that_reads_it() -> None:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))

    assert config["project"]["license"] == "Apache-2.0"
    assert "setuptools>=77" in config["build-system"]["requires"]
