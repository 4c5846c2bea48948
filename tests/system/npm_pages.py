"""Pages and scripts made of npm packages, for the tests that run a JavaScript client against a
real server: each in a folder of its own under ``tests/system/`` (``package.json`` pinning exact
versions, its ``package-lock.json`` committed, ``node_modules`` not), installed by ``npm ci``
(skipped while ``node_modules`` matches the lock), bundled by esbuild (nothing from a CDN), and
served as static files from an origin of their own (``frontend_origin``)."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import tempfile
from contextlib import AbstractContextManager
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.system.frontend_origin import frontend_origin

__all__ = ["NPM_SECONDS", "StaticFiles", "esbuild", "installed", "run", "tool"]

NPM_SECONDS = 300
INSTALLED_STAMP = Path("node_modules") / ".consentry-lock-sha256"
"""Where, in a source folder, the hash of the lock file ``node_modules`` was installed from is
kept (``npm ci`` runs again when it differs)."""


def run(command: list[str], *, cwd: Path, what: str) -> None:
    """Run ``command`` in ``cwd``; fail the test with its output when it fails."""
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=NPM_SECONDS, check=False
    )
    if done.returncode != 0:
        pytest.fail(f"{what} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def tool(name: str) -> str:
    """The path of a command the tests need (``node``, ``npm``), or the test fails saying how to
    install it."""
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"`{name}` is not installed: `apt-get install nodejs npm` (.ci/run does)")
    return found


def installed(source: Path) -> Path:
    """``source``'s ``node_modules``, by ``npm ci`` unless it was installed from the lock file
    ``source`` has now."""
    tool("node")
    lock_hash = hashlib.sha256((source / "package-lock.json").read_bytes()).hexdigest()
    stamp = source / INSTALLED_STAMP
    name = source.name.replace("_", "-")
    # one install at a time: pytest-xdist's workers each get the session fixtures that call this
    with open(Path(tempfile.gettempdir()) / f"consentry-{name}.lock", "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        if not stamp.is_file() or stamp.read_text() != lock_hash:
            run([tool("npm"), "ci", "--no-audit", "--no-fund"], cwd=source, what="npm ci")
            stamp.write_text(lock_hash)
    return source / "node_modules"


def esbuild(source: Path, entry: str, outfile: Path, *options: str) -> None:
    """Bundle ``source``'s ``entry`` (and what it imports from ``node_modules``) into ``outfile``,
    with the esbuild ``source`` pins."""
    command = [str(source / "node_modules" / ".bin" / "esbuild"), entry, "--bundle"]
    command += [*options, f"--outfile={outfile}", "--log-level=warning"]
    run(command, cwd=source, what="esbuild")


def bundled_page(source: Path, bundle: Path, entry: str, *options: str) -> Path:
    """``source``'s page in the folder ``bundle``: its packages installed, esbuild's bundle of
    ``entry`` as ``main.js`` beside a copy of its ``index.html``."""
    installed(source)
    esbuild(source, entry, bundle / "main.js", *options)
    shutil.copy(source / "index.html", bundle / "index.html")
    return bundle


def served(bundle: Path) -> AbstractContextManager[str]:
    """The folder ``bundle`` served from an origin of its own (``frontend_origin``)."""
    return frontend_origin(partial(StaticFiles, directory=str(bundle)))


class StaticFiles(SimpleHTTPRequestHandler):
    """A folder's files (give ``directory`` with ``functools.partial``), no access log."""

    def log_message(self, *_: Any) -> None:
        pass
