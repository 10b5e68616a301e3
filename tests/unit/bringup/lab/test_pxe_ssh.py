"""The PXE lab's SSH ramdisk: what ldd says a program loads, and the inventory that logs in."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from bringup.lab.network import LabError
from bringup.lab.pxe import PxeLabState, PxeVm, render_inventory
from bringup.lab.pxe_ssh import parse_ldd


def test_parse_ldd_names_each_library_and_the_loader_from_a_real_ldd():
    out = subprocess.run(["ldd", "/bin/ls"], capture_output=True, text=True, check=True).stdout
    found = dict(parse_ldd(out))
    assert "libc.so.6" in found and Path(found["libc.so.6"]).is_file()
    loaders = [name for name in found if name.startswith("/")]
    assert len(loaders) == 1 and found[loaders[0]] == loaders[0]
    assert not any("vdso" in name for name in found)


def test_a_library_ldd_cannot_find_is_an_error_naming_it():
    out = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibtomcrypt.so.1 => not found\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f00)\n"
    with pytest.raises(LabError, match="libtomcrypt.so.1 => not found"):
        parse_ldd(out)


def state(tmp_path: Path, ssh_key: str) -> PxeLabState:
    vm = PxeVm(
        "vm01",
        0,
        "bios",
        None,
        "52:54:00:00:01:00",
        "PXE1",
        "u",
        "http://10.0.0.11:8000",
        "10.1.0.11",
        "tap0",
    )
    return PxeLabState(
        "lab1", "abc123", "blabc123", str(tmp_path), str(tmp_path / "lab1.yml"), "s", "c", "m",
        "10.0.0.0/24", "10.1.0.0/24", "10.1.0.1", "http://10.0.0.1:1/", "/rd", [vm], ssh_key,
    )  # fmt: skip


def test_with_an_ssh_ramdisk_the_inventory_logs_in_as_root_with_the_labs_key(tmp_path: Path):
    inv = tmp_path / "lab1.yml"
    doc = yaml.safe_load(
        render_inventory(state(tmp_path, "/cache/pxe-ssh/id_ed25519"), inv, tmp_path / "pw", "p")
    )
    lab_vars = doc["all"]["vars"]
    assert lab_vars["ansible_user"] == "root"
    assert lab_vars["ansible_ssh_private_key_file"] == "/cache/pxe-ssh/id_ed25519"
    # Nothing turns host key checking off: burn-in is pinned to what provisioning recorded.
    assert "ansible_ssh_common_args" not in lab_vars
    plain = yaml.safe_load(render_inventory(state(tmp_path, ""), inv, tmp_path / "pw", "p"))["all"]["vars"]
    assert "ansible_user" not in plain and "ansible_ssh_private_key_file" not in plain
