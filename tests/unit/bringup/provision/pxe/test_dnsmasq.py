"""dnsmasq for PXE: the rendered configuration, reservations, and reading its log."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from bringup.provision.pxe.dnsmasq import (
    DhcpLog,
    Dnsmasq,
    DnsmasqConfig,
    DnsmasqError,
    Reservation,
    check_reservation,
    normalise_mac,
    parse_log_line,
    render_config,
    untraversable,
)

# Lines as dnsmasq 2.90 writes them with log-dhcp to a log-facility file (from a lab run).
LOG = """\
Nov 22 01:23:21 dnsmasq[32251]: started, version 2.90 DNS disabled
Nov 22 01:23:25 dnsmasq-dhcp[32251]: 1550467646 vendor class: PXEClient:Arch:00000:UNDI:002001
Nov 22 01:23:25 dnsmasq-dhcp[32251]: 1550467646 DHCPDISCOVER(pxe0) 02:33:da:05:01:00
Nov 22 01:23:25 dnsmasq-dhcp[32251]: 1550467646 DHCPOFFER(pxe0) 10.213.200.11 02:33:da:05:01:00
Nov 22 01:23:27 dnsmasq-dhcp[32251]: 1550467646 DHCPREQUEST(pxe0) 10.213.200.11 02:33:da:05:01:00
Nov 22 01:23:27 dnsmasq-dhcp[32251]: 1550467646 DHCPACK(pxe0) 10.213.200.11 02:33:da:05:01:00 vm01
Nov 22 01:23:30 dnsmasq-dhcp[32251]: 2071 DHCPDISCOVER(pxe0) 52:54:00:de:ad:01 ignored
Nov 22 01:23:31 dnsmasq-tftp[32251]: sent /srv/tftp/undionly.kpxe to 10.213.200.12
"""


@pytest.fixture
def open_dir():
    """A directory user nobody may enter (pytest's tmp_path is under a 0700 directory)."""
    path = Path(tempfile.mkdtemp(prefix="bringup-test-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def cfg(tmp_path: Path, **kw) -> DnsmasqConfig:
    return DnsmasqConfig(
        interface="pxe0",
        server_ip="10.20.0.1",
        subnet="10.20.0.0/24",
        boot_url="http://10.20.0.1:8080/boot.ipxe",
        state_dir=tmp_path / "pxe",
        **kw,
    )


def option_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def test_config_serves_only_reservations_with_client_classes(tmp_path):
    lines = option_lines(render_config(cfg(tmp_path)))
    assert "port=0" in lines and "bind-interfaces" in lines and "interface=pxe0" in lines
    assert "dhcp-ignore=tag:!known" in lines
    assert f"dhcp-hostsdir={tmp_path / 'pxe' / 'hosts.d'}" in lines
    assert "dhcp-range=10.20.0.0,static,255.255.255.0,1h" in lines
    assert "dhcp-match=set:ipxe,175" in lines
    assert {"dhcp-match=set:efi64,option:client-arch,7", "dhcp-match=set:efi64,option:client-arch,9"} <= set(
        lines
    )
    assert "dhcp-boot=tag:ipxe,http://10.20.0.1:8080/boot.ipxe" in lines
    assert "dhcp-boot=tag:!ipxe,tag:efi64,ipxe.efi,,10.20.0.1" in lines
    assert "dhcp-boot=tag:!ipxe,tag:!efi64,undionly.kpxe,,10.20.0.1" in lines
    assert "enable-tftp" in lines and not any("proxy" in line for line in lines)
    assert not any(line.startswith("enable-ra") for line in lines)


def test_config_proxy_mode_and_router_advertisements(tmp_path):
    lines = option_lines(render_config(cfg(tmp_path, proxy=True, enable_ra=True)))
    assert "dhcp-range=10.20.0.0,proxy,255.255.255.0" in lines
    assert not any(",static," in line for line in lines)
    services = [line for line in lines if line.startswith("pxe-service=")]
    assert any("x86PC" in s and "undionly.kpxe" in s and "tag:!ipxe" in s for s in services)
    assert any("x86-64_EFI" in s and "ipxe.efi" in s for s in services)
    assert any("tag:ipxe" in s and "boot.ipxe" in s for s in services)
    assert "enable-ra" in lines and "dhcp-range=::,constructor:pxe0,ra-only" in lines
    assert not any(
        line.startswith("dhcp-option=option:router") for line in lines
    )  # the site's DHCP does that


def test_config_site_options(tmp_path):
    lines = option_lines(
        render_config(cfg(tmp_path, router="10.20.0.254", ntp_servers=("10.0.0.5", "10.0.0.6")))
    )
    assert "dhcp-option=option:router,10.20.0.254" in lines
    assert "dhcp-option=option:ntp-server,10.0.0.5,10.0.0.6" in lines
    assert "dhcp-option=option:dns-server" in lines  # none configured: sent empty, not the server itself


@pytest.mark.parametrize(
    ("mac", "ip", "host", "why"),
    [
        ("02:00:00:00:00:01", "10.20.0.11", "gpu001", None),
        ("02:00:00:00:00:01", None, "gpu001", None),  # proxy mode: no address
        ("02:00:00:00:00:1", "10.20.0.11", "gpu001", "is not aa:bb"),
        ("02:00:00:00:00:01", "10.21.0.11", "gpu001", "outside the provisioning network"),
        ("02:00:00:00:00:01", "10.20.0.255", "gpu001", "broadcast"),
        ("02:00:00:00:00:01", "10.20.0.x", "gpu001", "not an IPv4"),
        ("02:00:00:00:00:01", "10.20.0.11", "gpu_001", "host name"),
    ],
)
def test_reservation_checks(mac, ip, host, why):
    import ipaddress

    got = check_reservation(Reservation(mac, ip, host), ipaddress.IPv4Network("10.20.0.0/24"))
    assert (got is None) if why is None else (why in got)


def test_normalise_mac():
    assert normalise_mac("AA-BB-CC-DD-EE-0F") == "aa:bb:cc:dd:ee:0f"
    assert normalise_mac("aabb.ccdd.ee0f") == "aa:bb:cc:dd:ee:0f"
    with pytest.raises(ValueError):
        normalise_mac("aa:bb")


def test_reserve_writes_one_file_per_node_and_only_when_changed(open_dir):
    d = Dnsmasq(cfg(open_dir), ipxe_files={})
    d.prepare()
    r = Reservation("02:00:00:00:00:01", "10.20.0.11", "gpu001")
    assert d.reserve(r, "gpu001") is True
    assert d.reserve(r, "gpu001") is False
    files = {p.name: p.read_text() for p in d.cfg.hosts_dir.iterdir()}
    assert files == {"gpu001": "02:00:00:00:00:01,10.20.0.11,gpu001\n"}  # no temporary file left there
    assert d.reserve(Reservation("02:00:00:00:00:01", "10.20.0.12", "gpu001"), "gpu001") is True
    assert (d.cfg.hosts_dir / "gpu001").read_text().split(",")[1] == "10.20.0.12"


def test_prepare_copies_ipxe_binaries_and_refuses_a_missing_one(open_dir, tmp_path):
    src = tmp_path / "undionly.kpxe"
    src.write_bytes(b"kpxe")
    d = Dnsmasq(cfg(open_dir), ipxe_files={"undionly.kpxe": src})
    d.prepare()
    assert (d.cfg.tftp_root / "undionly.kpxe").read_bytes() == b"kpxe"
    assert d.cfg.conf_file.read_text() == render_config(d.cfg)
    with pytest.raises(DnsmasqError, match="apt-get install ipxe"):
        Dnsmasq(cfg(open_dir), ipxe_files={"ipxe.efi": tmp_path / "nope.efi"}).prepare()
    with pytest.raises(DnsmasqError, match="user nobody, which cannot enter"):
        Dnsmasq(cfg(tmp_path), ipxe_files={}).prepare()  # under pytest's 0700 directory


def test_a_directory_nobody_cannot_enter_is_named(open_dir):
    locked = open_dir / "locked"
    (locked / "pxe").mkdir(parents=True)
    os.chmod(locked, 0o700)
    assert untraversable(locked / "pxe") == locked
    os.chmod(locked, 0o755)
    assert untraversable(locked / "pxe") is None


def test_parse_log_lines():
    events = [e for e in (parse_log_line(line) for line in LOG.splitlines()) if e]
    kinds = [(e.kind, e.mac, e.ip) for e in events]
    assert kinds == [
        ("DISCOVER", "02:33:da:05:01:00", None),
        ("OFFER", "02:33:da:05:01:00", "10.213.200.11"),
        ("REQUEST", "02:33:da:05:01:00", "10.213.200.11"),
        ("ACK", "02:33:da:05:01:00", "10.213.200.11"),
        ("DISCOVER", "52:54:00:de:ad:01", None),
        ("TFTP", None, "10.213.200.12"),
    ]
    assert events[3].detail == "vm01" and events[4].detail == "ignored"
    assert events[5].detail == "/srv/tftp/undionly.kpxe"


def test_dhcp_log_finds_a_mac_after_a_time(tmp_path):
    now = [100.0]
    log = DhcpLog(tmp_path / "dnsmasq.log", clock=lambda: now[0])
    log.feed(LOG.splitlines()[:3])  # a DISCOVER seen at t=100
    assert log.wait_for("02:33:da:05:01:00", ("DISCOVER",), since=100.0, timeout=0)[1].kind == "DISCOVER"
    assert log.wait_for("02:33:da:05:01:00", ("DISCOVER",), since=101.0, timeout=0) is None  # too old
    assert log.wait_for("02:33:da:05:01:00", ("ACK",), since=0, timeout=0) is None
    assert log.wait_for("52:54:00:de:ad:01", ("DISCOVER",), since=0, timeout=0) is None  # another MAC
    now[0] = 105.0
    log.feed(LOG.splitlines()[5:6])
    got = log.wait_for("02:33:da:05:01:00", ("ACK",), since=101.0, timeout=0)
    assert got is not None and got[0] == 105.0 and got[1].ip == "10.213.200.11"


def test_dhcp_log_follows_the_file(tmp_path):
    path = tmp_path / "dnsmasq.log"
    path.write_text(LOG.splitlines()[0] + "\n")
    log = DhcpLog(path)
    log.start()
    try:
        with path.open("a") as f:
            f.write("\n".join(LOG.splitlines()[1:4]) + "\n")
        got = log.wait_for("02:33:da:05:01:00", ("OFFER",), since=0, timeout=5)
    finally:
        log.stop()
    assert got is not None and got[1].ip == "10.213.200.11"
