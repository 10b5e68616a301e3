"""Checks the provisioning server makes before any node is powered (PXE backend).

- the clock: asked of timedatectl or chronyc when they run here, and measured against a
  configured reference (``pxe_clock_reference``: an HTTP(S) URL whose Date header is read, or
  ``ntp://HOST`` for an SNTP query) when one is set; a fresh node takes its time from us,
  and a skewed clock breaks HTTPS certificate checks (apt) on every node at once;
- the PXE interface exists, is up and holds the server address;
- no other DHCP server answers on the provisioning network (not in proxy mode): a DHCPDISCOVER
  from a made-up MAC is broadcast from the interface, and any OFFER is a problem.
"""

from __future__ import annotations

import contextlib
import email.utils
import ipaddress
import os
import random
import shutil
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

# -- the clock ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClockCheck:
    ok: bool
    how: str  # what was checked, in words (shown in the plan and in problems)


def parse_timedatectl(text: str) -> bool | None:
    """``timedatectl show -p NTPSynchronized --value`` -> True/False/None (pure)."""
    value = text.strip().lower()
    return {"yes": True, "no": False}.get(value)


def parse_chronyc_tracking(text: str) -> bool | None:
    """``chronyc -n tracking`` -> synchronised? (pure). Leap status "Not synchronised" is no."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == "leap status":
            return value.strip().lower() != "not synchronised"
    return None


def _run(args: list[str]) -> str | None:
    if shutil.which(args[0]) is None:
        return None
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def local_sync_status() -> tuple[bool | None, str]:
    """(synchronised?, source) from the time daemon, or (None, why not known)."""
    out = _run(["timedatectl", "show", "-p", "NTPSynchronized", "--value"])
    if out is not None and (state := parse_timedatectl(out)) is not None:
        return state, "timedatectl"
    out = _run(["chronyc", "-n", "tracking"])
    if out is not None and (state := parse_chronyc_tracking(out)) is not None:
        return state, "chronyc tracking"
    return None, "no timedatectl or chronyc answers here"


def http_date_offset(url: str, timeout: float = 5.0, clock: Callable[[], float] = time.time) -> float:
    """Our clock minus the reference's, from an HTTP Date header (1 s resolution)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    before = clock()
    req = urllib.request.Request(url, method="HEAD")
    try:
        resp = opener.open(req, timeout=timeout)
    except urllib.error.HTTPError as exc:  # any answer carries a Date
        resp = exc
    with contextlib.closing(resp):
        date = resp.headers.get("Date")
    after = clock()
    if not date:
        raise ValueError(f"{url} sent no Date header")
    remote = email.utils.parsedate_to_datetime(date).timestamp()
    # The Date is truncated to the second: compare with the middle of that second.
    return (before + after) / 2 - (remote + 0.5)


def sntp_offset(
    host: str, port: int = 123, timeout: float = 3.0, clock: Callable[[], float] = time.time
) -> float:
    """Our clock minus an NTP server's (one SNTP exchange, RFC 4330)."""
    packet = b"\x23" + b"\0" * 47  # LI 0, version 4, mode 3 (client)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        t1 = clock()
        s.sendto(packet, (host, port))
        data, _ = s.recvfrom(512)
        t4 = clock()
    return ntp_offset(data, t1, t4)


NTP_EPOCH = 2208988800


def ntp_offset(data: bytes, t1: float, t4: float) -> float:
    """Our clock minus the server's from an SNTP reply and our send/receive times (pure)."""
    if len(data) < 48:
        raise ValueError("short NTP reply")
    recv_s, recv_f, xmit_s, xmit_f = struct.unpack("!II II", data[32:48])
    t2 = recv_s - NTP_EPOCH + recv_f / 2**32
    t3 = xmit_s - NTP_EPOCH + xmit_f / 2**32
    return -((t2 - t1) + (t3 - t4)) / 2


def check_clock(reference: str | None, max_skew: float) -> ClockCheck:
    if reference:
        try:
            if reference.startswith("ntp://"):
                parts = urlsplit(reference)
                offset = sntp_offset(parts.hostname or "", parts.port or 123)
            else:
                offset = http_date_offset(reference)
        except (OSError, ValueError) as exc:
            return ClockCheck(False, f"clock reference {reference} could not be read: {exc}")
        how = f"clock {offset:+.1f} s from {reference} (limit {max_skew:g} s)"
        return ClockCheck(abs(offset) <= max_skew, how)
    synced, source = local_sync_status()
    if synced is None:
        return ClockCheck(
            False,
            f"cannot tell whether this server's clock is synchronised ({source}); "
            "set pxe_clock_reference (http(s)://... or ntp://HOST) to measure it",
        )
    return ClockCheck(synced, f"{source} says the clock is {'' if synced else 'NOT '}synchronised")


# -- the interface -------------------------------------------------------------------------------


def interface_problem(name: str, server_ip: str, sys_net: Path = Path("/sys/class/net")) -> str | None:
    path = sys_net / name
    if not path.exists():
        known = ", ".join(sorted(p.name for p in sys_net.iterdir())) if sys_net.is_dir() else ""
        return f"PXE interface {name} does not exist on this server (interfaces: {known})"
    try:
        flags = int((path / "flags").read_text().strip(), 16)
    except (OSError, ValueError):
        flags = 1
    if not flags & 0x1:
        return f"PXE interface {name} is down"
    addrs = interface_addresses(name)
    if server_ip not in addrs:
        return f"PXE interface {name} does not hold the server address {server_ip} (it has: {', '.join(addrs) or 'none'})"
    return None


def parse_ip_addr(text: str) -> list[str]:
    """Addresses from ``ip -o -4 addr show`` lines (pure)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if "inet" in parts:
            out.append(str(ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).ip))
    return out


def interface_addresses(name: str) -> list[str]:
    out = _run(["ip", "-o", "-4", "addr", "show", "dev", name])
    return parse_ip_addr(out or "")


# -- another DHCP server? --------------------------------------------------------------------------

DHCP_MAGIC = b"\x63\x82\x53\x63"


def discover_packet(mac: bytes, xid: int) -> bytes:
    """A DHCPDISCOVER with the broadcast flag set (pure)."""
    header = struct.pack(
        "!BBBBIHH4s4s4s4s", 1, 1, 6, 0, xid, 0, 0x8000, b"\0" * 4, b"\0" * 4, b"\0" * 4, b"\0" * 4
    )
    chaddr = mac + b"\0" * 10
    options = DHCP_MAGIC + bytes([53, 1, 1, 55, 4, 1, 3, 6, 54, 255])
    packet = header + chaddr + b"\0" * 192 + options
    return packet + b"\0" * max(0, 300 - len(packet))


@dataclass(frozen=True)
class Offer:
    server_id: str | None
    offered: str
    source: str


def parse_offer(data: bytes, xid: int, source: str = "") -> Offer | None:
    """A DHCPOFFER answering ``xid`` -> who offered what; anything else -> None (pure)."""
    if (
        len(data) < 240
        or data[0] != 2
        or struct.unpack("!I", data[4:8])[0] != xid
        or data[236:240] != DHCP_MAGIC
    ):
        return None
    yiaddr = socket.inet_ntoa(data[16:20])
    options, i = data[240:], 0
    msg_type, server_id = None, None
    while i < len(options) and options[i] != 255:
        code = options[i]
        if code == 0:
            i += 1
            continue
        if i + 1 >= len(options):
            break
        length = options[i + 1]
        value = options[i + 2 : i + 2 + length]
        if code == 53 and length == 1:
            msg_type = value[0]
        elif code == 54 and length == 4:
            server_id = socket.inet_ntoa(value)
        i += 2 + length
    if msg_type != 2:
        return None
    return Offer(server_id, yiaddr, source)


def probe_dhcp(interface: str, wait: float = 6.0) -> list[Offer]:
    """Broadcast one DHCPDISCOVER from ``interface`` and collect the OFFERs for ``wait`` s
    (servers ping an address before offering it: dnsmasq waits about 3 s, ISC dhcpd 1 s).

    The MAC is random and locally administered, so our own dnsmasq (which answers known MACs
    only) stays silent and any answer comes from somebody else. Needs root (port 68,
    SO_BINDTODEVICE).
    """
    mac = bytes([0x02, *random.randbytes(5)])
    xid = random.getrandbits(32)
    offers: list[Offer] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, interface.encode())
        s.bind(("", 68))
        s.sendto(discover_packet(mac, xid), ("255.255.255.255", 67))
        deadline = time.monotonic() + wait
        while (left := deadline - time.monotonic()) > 0:
            s.settimeout(left)
            try:
                data, (source, _) = s.recvfrom(4096)
            except TimeoutError:
                break
            offer = parse_offer(data, xid, source)
            if offer is not None:
                offers.append(offer)
    return offers


def dhcp_problem(interface: str, own_ips: set[str], wait: float = 6.0) -> str | None:
    """A line when another DHCP server answers on ``interface``, else None."""
    if os.geteuid() != 0:
        return "cannot probe for other DHCP servers without root (port 68); run bringup provision as root"
    try:
        offers = probe_dhcp(interface, wait)
    except OSError as exc:
        return f"cannot probe for other DHCP servers on {interface}: {exc}"
    foreign = [o for o in offers if (o.server_id or o.source) not in own_ips]
    if not foreign:
        return None
    who = "; ".join(f"{o.server_id or o.source} offered {o.offered}" for o in foreign)
    return (
        f"another DHCP server answers on {interface} ({who}): two servers on one provisioning network "
        "hand out conflicting answers; stop it, or set pxe_proxy_dhcp: true to work beside it"
    )
