"""Rack inventories: valid ones load, broken ones give one clear line per problem."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import main
from bringup.inventory.rack import load_rack, merged_host_vars, plaintext_secrets
from tests.paths import REPO

GOOD = """
all:
  vars:
    profile: h100-sxm-8x400g
    bmc_vendor: dell
    bmc_username: root
    bmc_password: env:TEST_BMC_PASSWORD
  children:
    r09:
      vars:
        bmc_vendor: hpe
      hosts:
        gpu001: {bmc_address: 10.1.0.1, rack_unit: 1}
        gpu002: {bmc_address: "https://10.1.0.2:8443", rack_unit: 7, bmc_vendor: supermicro}
"""


@pytest.fixture
def invdir(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "inventories" / "profiles", tmp_path / "profiles")
    return tmp_path


def write(invdir: Path, name: str, text: str) -> Path:
    path = invdir / f"{name}.yml"
    path.write_text(textwrap.dedent(text))
    return path


def check(invdir: Path, rack: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--inventory-dir", str(invdir), "inventory", "check", rack])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_good_inventory_merges_group_vars(invdir, monkeypatch):
    monkeypatch.setenv("TEST_BMC_PASSWORD", "x")
    write(invdir, "r09", GOOD)
    rack, problems = load_rack("r09", invdir)
    assert problems == []
    h1, h2 = rack.hosts
    assert (h1.name, h1.bmc_vendor, h1.profile, h1.rack_unit) == ("gpu001", "hpe", "h100-sxm-8x400g", 1)
    assert h2.bmc_vendor == "supermicro"  # host vars beat group vars
    assert str(h1.bmc_password) == "env:TEST_BMC_PASSWORD"
    assert rack.profiles["h100-sxm-8x400g"].gpu.count == 8


def test_hosts_are_typed_and_every_variable_travels_in_vars(invdir, monkeypatch):
    monkeypatch.setenv("TEST_BMC_PASSWORD", "x")
    write(invdir, "r09", GOOD)
    rack, _ = load_rack("r09", invdir)
    h1 = rack.hosts[0]
    assert (h1.rack, h1.bmc_address, h1.bmc_username) == ("r09", "10.1.0.1", "root")
    assert h1.vars["rack_unit"] == 1 and h1.vars["bmc_password"] == "env:TEST_BMC_PASSWORD"
    with pytest.raises(ValueError):
        h1.rack_unit = 2  # hosts are immutable


def test_shipped_inventories_are_valid(monkeypatch):
    monkeypatch.setenv("R01_BMC_PASSWORD", "x")
    rack, problems = load_rack("r01", REPO / "inventories")
    assert rack is not None and [p for p in problems if not p.warning] == []
    assert len(rack.hosts) == 4


def test_unset_env_reference_is_a_warning_not_an_error(invdir, monkeypatch):
    monkeypatch.delenv("TEST_BMC_PASSWORD", raising=False)
    write(invdir, "r09", GOOD)
    code, out = check(invdir, "r09")
    assert code == 0
    assert "warning: environment variable TEST_BMC_PASSWORD is not set" in out


BROKEN = {
    "missing field": (
        """
        all:
          hosts:
            gpu001: {bmc_vendor: dell, profile: h100-sxm-8x400g, rack_unit: 1, bmc_username: root,
                     bmc_password: env:X}
        """,
        ["host gpu001: field bmc_address: missing"],
    ),
    "unknown profile": (
        """
        all:
          vars: {bmc_vendor: dell, bmc_username: root, bmc_password: env:X}
          hosts:
            gpu001: {bmc_address: 10.0.0.1, rack_unit: 1, profile: b300-nvl72}
        """,
        ["host gpu001: field profile: unknown profile 'b300-nvl72'"],
    ),
    "plaintext password": (
        """
        all:
          vars: {bmc_vendor: dell, bmc_username: root, profile: h100-sxm-8x400g}
          hosts:
            gpu001: {bmc_address: 10.0.0.1, rack_unit: 1, bmc_password: calvin}
        """,
        ["host gpu001: field bmc_password: plaintext password in inventory; reference the secret instead"],
    ),
    "duplicate bmc address": (
        """
        all:
          vars: {bmc_vendor: dell, bmc_username: root, profile: h100-sxm-8x400g, bmc_password: env:X}
          hosts:
            gpu001: {bmc_address: 10.0.0.1, rack_unit: 1}
            gpu002: {bmc_address: "https://10.0.0.1/", rack_unit: 2}
        """,
        ["host gpu002: field bmc_address: duplicate BMC address https://10.0.0.1/ (also host gpu001)"],
    ),
    "malformed yaml": (
        """
        all:
          hosts:
            gpu001: {bmc_address: 10.0.0.1, rack_unit: 1
            gpu002: {}
        """,
        ["malformed YAML at line 5"],
    ),
    "bad vendor and unit": (
        """
        all:
          vars: {bmc_username: root, profile: h100-sxm-8x400g, bmc_password: env:X}
          hosts:
            gpu001: {bmc_address: 10.0.0.1, rack_unit: 0, bmc_vendor: lenovo}
        """,
        [
            "host gpu001: field bmc_vendor: must be one of dell, hpe, supermicro, generic, got 'lenovo'",
            "host gpu001: field rack_unit: must be a positive integer, got 0",
        ],
    ),
    "rack unit as a bool, address as a list": (
        """
        all:
          vars: {bmc_vendor: dell, bmc_username: root, profile: h100-sxm-8x400g, bmc_password: env:X}
          hosts:
            gpu001: {bmc_address: [10.0.0.1], rack_unit: true}
        """,
        [
            "host gpu001: field bmc_address: is not a host name, IP address or URL: ['10.0.0.1']",
            "host gpu001: field rack_unit: must be a positive integer, got True",
        ],
    ),
    "group password and ansible_password": (
        """
        all:
          vars: {bmc_username: root, profile: h100-sxm-8x400g, bmc_vendor: dell, bmc_password: hunter2}
          hosts:
            gpu001: {bmc_address: 10.0.0.1, rack_unit: 1, ansible_password: s3cret}
        """,
        [
            "field bmc_password (group all vars): plaintext password",
            "host gpu001: field ansible_password: plaintext password",
        ],
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_inventory_one_line_per_problem(invdir, monkeypatch, case):
    monkeypatch.setenv("X", "x")
    text, expected = BROKEN[case]
    path = write(invdir, "bad", text)
    code, out = check(invdir, "bad")
    assert code == 1
    assert "Traceback" not in out
    problem_lines = [line for line in out.splitlines() if line.startswith(str(path))]
    for want in expected:
        assert any(want in line for line in problem_lines), f"{want!r} not in:\n{out}"
    assert len(problem_lines) == len(expected), out
    # Secrets never appear in the output.
    for secret in ("calvin", "hunter2", "s3cret"):
        assert secret not in out


def test_credential_file_must_be_0600(invdir, tmp_path):
    secret = tmp_path / "bmc.pass"
    secret.write_text("pw\n")
    secret.chmod(0o644)
    write(invdir, "r09", GOOD.replace("env:TEST_BMC_PASSWORD", "file:bmc.pass"))
    code, out = check(invdir, "r09")
    assert code == 1 and "mode 0644; it must be 0600" in out
    secret.chmod(0o600)
    assert check(invdir, "r09")[0] == 0


def test_broken_profile_names_file_and_field(invdir, monkeypatch):
    monkeypatch.setenv("TEST_BMC_PASSWORD", "x")
    prof = invdir / "profiles" / "h100-sxm-8x400g.yml"
    prof.write_text(
        prof.read_text().replace("count: 8 ", "count: eight ").replace("rate_gbps: 400", "rate_gbps: -1")
    )
    write(invdir, "r09", GOOD)
    code, out = check(invdir, "r09")
    assert code == 1
    assert f"{prof}: field gpu.count: must be int, got str 'eight'" in out
    assert f"{prof}: field ib.rate_gbps: must be positive, got -1" in out


def test_missing_inventory_lists_known_racks(invdir):
    write(invdir, "r09", GOOD)
    code, out = check(invdir, "r10")
    assert code == 1 and "no such inventory (racks in" in out and "r09" in out


def test_cli_entry_point_has_no_traceback(invdir):
    write(invdir, "bad", "all: [unclosed\n")
    env = {**os.environ, "BRINGUP_INVENTORY_DIR": str(invdir)}
    proc = subprocess.run(
        [sys.executable, "-m", "bringup", "inventory", "check", "bad"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1
    assert "malformed YAML" in proc.stderr and "Traceback" not in proc.stderr + proc.stdout


def test_vault_values_count_as_references(invdir):
    text = GOOD.replace(
        "bmc_password: env:TEST_BMC_PASSWORD",
        "bmc_password: !vault |\n          $ANSIBLE_VAULT;1.1;AES256\n          6162",
    )
    write(invdir, "r09", text)
    rack, problems = load_rack("r09", invdir)
    assert rack is not None and rack.hosts[0].bmc_password.kind == "vault"
    assert "6162" not in str(rack.hosts[0].bmc_password)  # what messages and logs show


def test_merge_precedence_is_depth_then_host():
    data = {
        "all": {
            "vars": {"a": 0, "b": 0},
            "children": {
                "g1": {"vars": {"a": 1}, "children": {"g2": {"vars": {"a": 2}, "hosts": {"h": {"b": 3}}}}}
            },
        }
    }
    merged, problems = merged_host_vars(data, "f")
    assert problems == [] and merged["h"] == {"a": 2, "b": 3}


def test_plaintext_scan_ignores_references():
    data = {
        "all": {
            "vars": {"bmc_password": "env:X", "api_token": "file:/t"},
            "hosts": {"h": {"x_secret": "ok!"}},
        }
    }
    problems = plaintext_secrets(data, "f")
    assert [(p.host, p.field) for p in problems] == [("h", "x_secret")]
