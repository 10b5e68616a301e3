"""The PXE pre-flight's parsers: time daemon, NTP offset, DHCP packets, the interface (pure)."""

from __future__ import annotations

import socket
import struct

import pytest

from bringup.provision.pxe import preflight


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
