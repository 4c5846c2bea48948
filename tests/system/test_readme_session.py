"""The README's curl session is real: run the script against a live server and compare."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.paths import ROOT
from tests.system.server import serve

_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}")
_MESSAGE_IDS = re.compile(r"(lc_run--|msg-)[0-9a-f-]+")
_TIMES = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


def _normalize(text: str) -> str:
    text = _TIMES.sub("<time>", _IDS.sub("<id>", text))
    return _MESSAGE_IDS.sub("<message-id>", text).strip()


def _readme_session() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- session-output:start -->")[1].split("<!-- session-output:end -->")[0]
    return block.strip().removeprefix("```text").removesuffix("```")


def test_readme_curl_session_matches_a_real_run(tmp_path: Path) -> None:
    # as `make run` serves a new database: with the sample notes
    with serve(tmp_path / "consentry.db", env={"CONSENTRY_SAMPLE_NOTES": "true"}) as base_url:
        result = subprocess.run(
            ["bash", str(ROOT / "docs" / "examples" / "consent_round_trip.sh"), base_url],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert _normalize(result.stdout) == _normalize(_readme_session())
    assert "already_decided" in result.stdout
