"""Shared fixtures: the ``kicklab`` binary the package is compared with.

The binary is ``$KICKLAB_BIN`` or the repository's
``target/release/kicklab`` (``cargo build --release -p kicklab``). Tests
that compare with it are skipped where it is missing, unless
``KICKLAB_REQUIRE_CLI=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Cli:
    """Runs the ``kicklab`` binary."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """Runs ``kicklab ARGS``; returns the finished process (any exit code)."""
        return subprocess.run(
            [str(self.path), *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=600,
            check=False,
        )

    def json(self, *args: str) -> Any:
        """Runs ``kicklab ARGS --json`` and parses its one line of JSON."""
        p = self.run(*args, "--json")
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    def error(self, *args: str) -> str:
        """Runs ``kicklab ARGS`` expecting exit code 2; returns stderr's line."""
        p = self.run(*args)
        assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
        return p.stderr.strip()


@pytest.fixture(scope="session")
def cli() -> Cli:
    """The ``kicklab`` binary, or a skip (a failure under KICKLAB_REQUIRE_CLI=1)."""
    path = Path(os.environ.get("KICKLAB_BIN", ROOT / "target" / "release" / "kicklab"))
    if not path.is_file():
        msg = f"{path} not found: cargo build --release -p kicklab (or set KICKLAB_BIN)"
        if os.environ.get("KICKLAB_REQUIRE_CLI") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return Cli(path)
