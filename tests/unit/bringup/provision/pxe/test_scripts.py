"""The PXE backend's iPXE scripts, install disk rules and autoinstall user data (pure)."""

from __future__ import annotations

import pytest
import yaml

from bringup.provision.pxe import scripts

BASE = "http://10.20.0.1:8080"
MAC = "02:00:00:00:00:01"

# -- iPXE scripts --------------------------------------------------------------------------


def test_chain_script_reports_the_firmware_view():
    text = scripts.chain_script(BASE)
    assert text.startswith("#!ipxe\n")
    chain = next(line for line in text.splitlines() if line.startswith("chain "))
    assert f"{BASE}/node.ipxe?mac=${{netX/mac}}" in chain
    for var in ("${uuid}", "${serial:uristring}", "${platform}", "${manufacturer:uristring}"):
        assert var in chain


def test_agent_script_boots_the_ramdisk_with_the_callback():
    text = scripts.agent_script(BASE, MAC, "tok-1")
    kernel = next(line for line in text.splitlines() if line.startswith("kernel "))
    assert kernel.startswith(f"kernel {BASE}/files/vmlinuz initrd=initrd.gz ")  # old iPXE on UEFI needs this
    assert f"bringup.url={BASE}" in kernel and f"bringup.mac={MAC}" in kernel
    assert "bringup.token=tok-1" in kernel  # the attempt's token, for the agent to send back
    assert f"initrd --name initrd.gz {BASE}/files/initrd.gz" in text and text.rstrip().endswith("boot")


def test_install_script_points_the_installer_at_this_nodes_seed():
    text = scripts.install_script(
        BASE, MAC, "tok-1", "http://mirror/vmlinuz", "http://mirror/initrd", "http://mirror/x.iso"
    )
    assert f"ds=nocloud-net;s={BASE}/cloud-init/{MAC}/tok-1/" in text and "autoinstall" in text
    assert "url=http://mirror/x.iso" in text and "kernel http://mirror/vmlinuz" in text


def test_local_and_unknown_scripts_never_load_anything():
    for text in (scripts.local_script(), scripts.unknown_script(MAC)):
        assert "kernel" not in text and "chain" not in text
    assert "sanboot" in scripts.local_script() and "exit" in scripts.local_script()


# -- install disk ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (None, {"size": "smallest"}),
        ("largest", {"size": "largest"}),
        ("serial:S3EVNX0M*", {"serial": "S3EVNX0M*"}),
        ("model: SAMSUNG MZ1L2960", {"model": "SAMSUNG MZ1L2960"}),
        ({"model": "MZ*", "size": "smallest"}, {"model": "MZ*", "size": "smallest"}),
    ],
)
def test_disk_rules(value, rule):
    assert scripts.parse_disk_rule(value) == rule


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("/dev/sda", "device path"),
        ({"path": "/dev/nvme0n1"}, "must not use path"),
        ({"size": "1T"}, "largest or smallest"),
        ({"colour": "blue"}, "unknown key"),
        ("sda", "expected serial"),
        (42, "mapping or a string"),
    ],
)
def test_disk_rules_refused(value, why):
    with pytest.raises(ValueError, match=why):
        scripts.parse_disk_rule(value)


DISKS = [
    {"name": "nvme0n1", "size_bytes": 3_840_000_000_000, "model": "SAMSUNG MZWLO3T8", "serial": "S6A1"},
    {"name": "nvme1n1", "size_bytes": 960_000_000_000, "model": "SAMSUNG MZ1L2960", "serial": "S3EV1"},
    {"name": "nvme2n1", "size_bytes": 3_840_000_000_000, "model": "SAMSUNG MZWLO3T8", "serial": "S6A2"},
]


def test_pick_disk_follows_the_rule_not_the_order():
    assert scripts.pick_disk({"size": "smallest"}, DISKS)["serial"] == "S3EV1"
    assert scripts.pick_disk({"serial": "S6A2"}, DISKS)["name"] == "nvme2n1"
    assert scripts.pick_disk({"model": "*MZ1L*"}, DISKS)["name"] == "nvme1n1"
    assert scripts.pick_disk({"serial": "NOPE"}, DISKS) is None
    assert scripts.pick_disk({"size": "smallest"}, list(reversed(DISKS)))["serial"] == "S3EV1"


def test_user_data_installs_by_rule_with_keys_ntp_and_phone_home():
    spec = scripts.InstallSpec(
        hostname="gpu001",
        mac=MAC,
        base_url=BASE,
        disk_rule={"serial": "S3EV1"},
        ssh_keys=["ssh-ed25519 AAAA ops"],
        ntp_servers=["10.0.0.5"],
        agent_script="#!/bin/sh\necho hi\n",
        token="tok-1",
    )
    text = scripts.user_data(spec)
    assert text.startswith("#cloud-config\n") and "/dev/sd" not in text
    doc = yaml.safe_load(text)["autoinstall"]
    assert doc["storage"]["layout"] == {"name": "direct", "match": {"serial": "S3EV1"}}
    assert doc["ssh"]["authorized-keys"] == ["ssh-ed25519 AAAA ops"]
    # Every call back carries the attempt's token (the installer's webhook: in its URL).
    assert doc["reporting"]["bringup"]["endpoint"] == f"{BASE}/progress/{MAC}?token=tok-1"
    assert any(f"{BASE}/installed/{MAC}?token=tok-1" in c for c in doc["late-commands"])
    first = doc["user-data"]
    assert first["hostname"] == "gpu001" and first["ntp"]["servers"] == ["10.0.0.5"]
    assert first["write_files"][0]["content"] == "#!/bin/sh\necho hi\n"
    assert f"BRINGUP_URL={BASE} BRINGUP_MAC={MAC} BRINGUP_TOKEN=tok-1" in first["runcmd"][0][2]


def test_safe_mac():
    assert scripts.safe_mac("02-00-00-00-00-0A") == "02:00:00:00:00:0a"
    assert scripts.safe_mac("../etc/passwd") is None
