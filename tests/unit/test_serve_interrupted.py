"""``consentry serve`` stopped by Ctrl-C or SIGTERM at any moment ends with one line and exit 0:
a line of its log once the log is set up, a plain line before (while it imports or checks its
settings), and SIGTERM's handler is given back."""

from __future__ import annotations

import gc
import logging
import signal
from typing import Any

import pytest

import consentry.serve
from consentry.cli import main


def _interrupted(**_: Any) -> int:
    raise KeyboardInterrupt


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """``gc.freeze`` as the process's end calls it, recorded rather than run in the test's
    process."""
    calls: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append(True))
    return calls


def test_a_stop_before_the_log_is_set_up_is_one_plain_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], frozen: list[bool]
) -> None:
    monkeypatch.setattr(consentry.serve, "serve_command", _interrupted)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # no log configured yet
    before = signal.getsignal(signal.SIGTERM)

    code = main(["serve"])

    assert code == 0
    assert capsys.readouterr() == ("", "consentry: stopped\n")
    assert signal.getsignal(signal.SIGTERM) is before
    assert frozen == [True]  # the process ends next: its heap is left to the end


def test_a_stop_once_the_log_is_set_up_is_its_last_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(consentry.serve, "serve_command", _interrupted)

    with caplog.at_level(logging.INFO, logger="consentry"):
        code = main(["serve"])

    assert code == 0
    assert capsys.readouterr().err == ""
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("consentry", "INFO", "stopped")
    ]
