"""The burnin_tools role's install of `burnin` (burnin.yml), run by real Ansible on this machine
(connection local) into a temporary directory: from a wheelhouse of a stand-in gpu-bringup wheel
(a `burnin` console script, the pinned version) and pip's real wheel, with no index. The venv
is made without pip, pip runs from its wheel, `burnin health --help` runs, and a second run
changes nothing. The real package from a real wheelhouse: tests/lab/test_configure_lab.py."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib
import yaml

from tests.paths import REPO
from tests.playbooks import run_play

DEFAULTS = REPO / "playbooks/roles/burnin_tools/defaults/main.yml"


def run_role(tmp_path: Path, extra: dict) -> subprocess.CompletedProcess:
    return run_play(
        tmp_path,
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ansible.builtin.include_role:\n        name: burnin_tools\n        tasks_from: burnin.yml\n",
        extra,
    )


def fake_wheel(wheelhouse: Path, version: str) -> Path:
    """A wheel named gpu-bringup at `version` whose `burnin` prints a usage line."""
    path = wheelhouse / f"gpu_bringup-{version}-py3-none-any.whl"
    info = f"gpu_bringup-{version}.dist-info"
    files = {
        "burnin/__init__.py": "",
        "burnin/cli.py": "import sys\n\ndef main():\n    print('Usage: burnin ' + ' '.join(sys.argv[1:]))\n    return 0\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: gpu-bringup\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": "[console_scripts]\nburnin = burnin.cli:main\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
        whl.writestr(f"{info}/RECORD", record)
    return path


def pip_wheel(wheelhouse: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(wheelhouse),
            "pip",
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or not list(wheelhouse.glob("pip-*.whl")):
        pytest.skip(f"UNKNOWN: pip's wheel could not be fetched here: {done.stderr[-300:]}")


def test_the_pinned_version_is_the_package_version():
    pinned = yaml.safe_load(DEFAULTS.read_text())["burnin_tools_burnin_version"]
    assert pinned == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_role_installs_burnin_offline_and_a_second_run_changes_nothing(tmp_path):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    version = yaml.safe_load(DEFAULTS.read_text())["burnin_tools_burnin_version"]
    fake_wheel(wheelhouse, version)
    pip_wheel(wheelhouse)
    extra = {
        "burnin_tools_burnin_wheelhouse": str(wheelhouse),
        "burnin_tools_burnin_wheels": str(tmp_path / "node/opt/bringup/wheels"),
        "burnin_tools_burnin_venv": str(tmp_path / "node/opt/bringup/venv"),
        "burnin_tools_burnin_python": sys.executable,
    }
    first = run_role(tmp_path, extra)
    assert first.returncode == 0, first.stdout + first.stderr
    burnin = tmp_path / "node/opt/bringup/venv/bin/burnin"
    assert subprocess.run([str(burnin), "health", "--help"], capture_output=True, text=True).stdout == (
        "Usage: burnin health --help\n"
    )
    assert not (tmp_path / "node/opt/bringup/venv/bin/pip").exists()  # made without pip
    again = run_role(tmp_path, extra)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout


def test_a_wheelhouse_without_the_pinned_package_is_refused_with_how_to_build_it(tmp_path):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    fake_wheel(wheelhouse, "0.0.9")
    pip_wheel(wheelhouse)
    extra = {
        "burnin_tools_burnin_wheelhouse": str(wheelhouse),
        "burnin_tools_burnin_wheels": str(tmp_path / "node/wheels"),
        "burnin_tools_burnin_venv": str(tmp_path / "node/venv"),
        "burnin_tools_burnin_python": sys.executable,
    }
    done = run_role(tmp_path, extra)
    assert done.returncode != 0
    assert "pip wheel --wheel-dir" in done.stdout
    assert not (tmp_path / "node/venv").exists()
