"""Pure parts of the PXE backend: iPXE scripts, install disk rules, autoinstall, the watchdog,
the agent ramdisk's module order and archive, and the pre-flight parsers."""

from __future__ import annotations

import gzip
import socket
import struct

import pytest
import yaml

from bringup.provision.pxe import preflight, ramdisk, scripts
from bringup.provision.pxe.watchdog import Step, Watchdog, WatchdogPolicy

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


# -- the watchdog --------------------------------------------------------------------------------


def test_watchdog_retries_then_fails_with_the_reason():
    dog = Watchdog(WatchdogPolicy(timeout_s=15, retries=2))
    dog.powered_on(0.0)
    assert dog.step(14.9) is Step.WAIT
    assert dog.step(15.0) is Step.RETRY
    dog.powered_on(30.0)
    assert dog.step(44.0) is Step.WAIT and dog.step(45.0) is Step.RETRY
    dog.powered_on(60.0)
    assert dog.step(75.0) is Step.FAIL
    assert dog.attempts == 3
    assert dog.reason().startswith("no DHCP request within 15 s (powered on 3 times")


def test_watchdog_is_done_once_dhcp_is_seen():
    dog = Watchdog(WatchdogPolicy(timeout_s=15, retries=0))
    dog.powered_on(10.0)
    dog.dhcp_seen(13.5)
    assert dog.step(100.0) is Step.DONE and dog.waited() == 3.5
    dog.powered_on(200.0)  # a new power-on forgets the old sighting
    assert dog.step(216.0) is Step.FAIL and "powered on 2 times" in dog.reason()


def test_watchdog_policy_and_order():
    with pytest.raises(ValueError):
        WatchdogPolicy(timeout_s=0)
    with pytest.raises(ValueError):
        WatchdogPolicy(retries=-1)
    with pytest.raises(RuntimeError):
        Watchdog(WatchdogPolicy()).step(0)


# -- the ramdisk ----------------------------------------------------------------------------------


def test_module_depends_and_load_order():
    modinfo = b"\x7fELF...\0license=GPL\0depends=virtio,virtio_ring\0retpoline=Y\0name=virtio_net\0"
    assert ramdisk.module_depends(modinfo) == ["virtio", "virtio_ring"]
    assert ramdisk.module_depends(b"\0depends=\0name=virtio\0") == []
    deps = {
        "virtio_net": ["kernel/drivers/net/virtio_net.ko", "kernel/net/core/failover.ko", "kernel/virtio.ko"],
        "failover": ["kernel/net/core/failover.ko"],
        "virtio": ["kernel/virtio.ko", "kernel/virtio_ring.ko"],
        "virtio_ring": ["kernel/virtio_ring.ko"],
    }
    order = ramdisk.load_order(["virtio_net", "virtio", "builtin_one"], deps)
    assert (
        order.index("kernel/virtio_ring.ko")
        < order.index("kernel/virtio.ko")
        < order.index("kernel/drivers/net/virtio_net.ko")
    )
    assert order.index("kernel/net/core/failover.ko") < order.index("kernel/drivers/net/virtio_net.ko")
    assert len(order) == len(set(order)) == 4


def test_modules_dep_parsing():
    deps = ramdisk.parse_modules_dep(
        "kernel/a/virtio-net.ko.xz: kernel/b/virtio.ko.xz\nkernel/b/virtio.ko.xz:\n"
    )
    assert deps == {
        "virtio_net": ["kernel/a/virtio-net.ko.xz", "kernel/b/virtio.ko.xz"],
        "virtio": ["kernel/b/virtio.ko.xz"],
    }


def _read_newc(data: bytes) -> dict[str, tuple[int, int, bytes]]:
    out, i = {}, 0
    while True:
        head = data[i : i + 110]
        assert head[:6] == b"070701"
        fields = [int(head[6 + 8 * k : 14 + 8 * k], 16) for k in range(13)]
        namesize, size = fields[11], fields[6]
        name = data[i + 110 : i + 110 + namesize - 1].decode()
        i += 110 + namesize
        i += -i % 4
        body = data[i : i + size]
        i += size + (-size % 4)
        if name == "TRAILER!!!":
            return out
        out[name] = (fields[1], fields[9] << 8 | fields[10], body)


def test_newc_archive_round_trip():
    data = ramdisk.newc_archive(
        [("bin", 0o40755, b""), ("init", 0o100755, b"#!/bin/sh\n"), ("dev/console", 0o20600, b"")],
        {"dev/console": (5, 1)},
    )
    entries = _read_newc(gzip.decompress(gzip.compress(data)))
    assert entries["init"] == (0o100755, 0, b"#!/bin/sh\n")
    assert entries["dev/console"][:2] == (0o20600, 5 << 8 | 1)
    assert ramdisk.content_key([b"a", b"b"]) != ramdisk.content_key([b"ab"])


# -- pre-flight parsers ----------------------------------------------------------------------------


def test_time_daemon_answers():
    assert preflight.parse_timedatectl("yes\n") is True and preflight.parse_timedatectl("no") is False
    assert preflight.parse_timedatectl("") is None
    ok = "Reference ID    : C0A80001 (10.0.0.5)\nLeap status     : Normal\n"
    assert preflight.parse_chronyc_tracking(ok) is True
    assert preflight.parse_chronyc_tracking("Leap status     : Not synchronised\n") is False
    assert preflight.parse_chronyc_tracking("nothing") is None


def test_ntp_offset():
    def ts(t: float) -> bytes:
        secs = int(t) + preflight.NTP_EPOCH
        return struct.pack("!II", secs, int((t % 1) * 2**32))

    # The server is 10 s behind us; 0.2 s round trip.
    reply = b"\x24" + b"\0" * 31 + ts(1000.1 - 10) + ts(1000.1 - 10)
    assert preflight.ntp_offset(reply, 1000.0, 1000.2) == pytest.approx(10.0, abs=0.01)


def test_dhcp_discover_and_offer():
    mac = bytes.fromhex("02aabbccddee")
    packet = preflight.discover_packet(mac, 0x1234)
    assert len(packet) >= 300 and packet[0] == 1 and packet[28:34] == mac
    assert struct.unpack("!H", packet[10:12])[0] == 0x8000  # broadcast flag
    assert packet[236:240] == preflight.DHCP_MAGIC and bytes([53, 1, 1]) in packet[240:]
    offer = bytearray(packet)
    offer[0] = 2
    offer[16:20] = socket.inet_aton("10.20.0.150")
    offer[240:] = bytes([53, 1, 2, 54, 4, *socket.inet_aton("10.20.0.250"), 255])
    got = preflight.parse_offer(bytes(offer), 0x1234, "10.20.0.250")
    assert got == preflight.Offer("10.20.0.250", "10.20.0.150", "10.20.0.250")
    assert preflight.parse_offer(bytes(offer), 0x9999) is None  # another transaction
    assert preflight.parse_offer(packet, 0x1234) is None  # our own DISCOVER


def test_interface_problem(tmp_path):
    (tmp_path / "pxe0").mkdir()
    (tmp_path / "pxe0" / "flags").write_text("0x1002\n")  # down
    assert "does not exist" in preflight.interface_problem("eth9", "10.0.0.1", tmp_path)
    assert "is down" in preflight.interface_problem("pxe0", "10.0.0.1", tmp_path)
    assert preflight.parse_ip_addr("2: pxe0    inet 10.20.0.1/24 brd 10.20.0.255 scope global pxe0\n") == [
        "10.20.0.1"
    ]
