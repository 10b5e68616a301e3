"""A lab node's root with one platform's stand-ins installed, for the stand-in tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from bringup.lab import standins
from tests.conftest import unavailable

SYSTEM_PYTHON = Path("/usr/bin/python3")  # the python a lab node has, which runs the dispatcher


@pytest.fixture
def lab_node(tmp_path: Path) -> Callable[..., Path]:
    """make(platform, *faults, index=None): a node root of `platform` (None: the base, HGX H100)
    carrying `faults`; with `index`, its identity file first (the node's number and platform)."""
    if not SYSTEM_PYTHON.exists():
        unavailable("needs /usr/bin/python3 (the python a lab node has)")

    def make(platform: str | None, *faults: str, index: int | None = None) -> Path:
        root = tmp_path / ("node-" + "-".join(faults or ("healthy",)))
        if index is not None:
            (root / "etc" / "bringup-lab").mkdir(parents=True)
            identity = {"index": index, "platform": platform}
            (root / "etc" / "bringup-lab" / "identity.json").write_text(json.dumps(identity))
        standins.install_standins(root, faults, platform)
        return root

    return make
