"""The configure playbooks pass ansible-lint's production profile (playbooks/.ansible-lint) and
Ansible's own syntax check. ansible-lint is a dev dependency: missing, the test fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.paths import REPO

BIN = Path(sys.executable).parent


def test_ansible_lint_production_profile_passes():
    lint = BIN / "ansible-lint"
    assert lint.is_file(), f"{lint} missing: pip install -e '.[dev]'"
    proc = subprocess.run(
        [str(lint), "--offline", "playbooks/"], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "Passed" in output and "'production'" in output, output


def test_site_yml_syntax_check():
    proc = subprocess.run(
        [str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,", "site.yml"],
        cwd=REPO / "playbooks",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
