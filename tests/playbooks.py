"""Run a small play with this environment's real ansible-playbook on this machine (connection
local), against the repository's roles: how the role tests check tasks, files and idempotence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

BIN = Path(sys.executable).parent


def run_play(
    tmp_path: Path, play: str, extra: dict, inventory: Path | None = None
) -> subprocess.CompletedProcess:
    """``play`` (YAML text) with ``extra`` as extra vars; HOME is ``tmp_path``. On localhost
    (connection local), or on the hosts of ``inventory`` (which say their own connection)."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(play)
    vars_file = tmp_path / "vars.json"
    vars_file.write_text(json.dumps(extra))
    hosts = ["-i", str(inventory)] if inventory else ["-i", "localhost,", "-c", "local"]
    return subprocess.run(
        [str(BIN / "ansible-playbook"), *hosts, str(playbook), "-e", f"@{vars_file}"],
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
