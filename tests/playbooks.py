"""Run a small play with this environment's real ansible-playbook on this machine (connection
local), against the repository's roles: how the role tests check tasks, files and idempotence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

BIN = Path(sys.executable).parent


def run_play(tmp_path: Path, play: str, extra: dict) -> subprocess.CompletedProcess:
    """``play`` (YAML text) on localhost with ``extra`` as extra vars; HOME is ``tmp_path``."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(play)
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps(extra))
    return subprocess.run(
        [
            str(BIN / "ansible-playbook"),
            "-i",
            "localhost,",
            "-c",
            "local",
            str(playbook),
            "-e",
            f"@{vars_file}",
        ],
        cwd=REPO / "playbooks",
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
        },
    )
