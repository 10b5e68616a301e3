"""``ibstat`` and ``ibstatus`` (infiniband-diags).

``ibstat`` may print good data for some HCAs and then ``ibpanic: ...`` and exit 255: the
parsed HCAs are returned with the panic in ``problems``. Ethernet ports of the same mlx5
namespace (CX-6 Dx, BlueField) appear too: filter on ``link_layer`` before judging.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from burnin.parsers._common import MAX_LINK_GBPS, clean, number, parser, split_lines, to_float, to_int
from burnin.parsers.errors import ParseError


@dataclass(frozen=True)
class IbPort:
    number: int
    state: str | None  # 'Active', 'Down', 'Initializing', 'Armed'
    physical_state: str | None  # 'LinkUp', 'Polling', 'Disabled', ...
    rate: float | None  # Gb/s as printed ('Rate: 400'); float because SDR 1x prints 2.5
    base_lid: int | None
    sm_lid: int | None
    lmc: int | None
    port_guid: str | None
    capability_mask: str | None
    link_layer: str | None  # 'InfiniBand' / 'Ethernet'


@dataclass(frozen=True)
class Hca:
    name: str  # 'mlx5_0'
    ca_type: str | None  # 'MT4129' (ConnectX-7)
    num_ports: int | None
    firmware: str | None
    hardware_version: str | None
    node_guid: str | None
    system_image_guid: str | None
    ports: tuple[IbPort, ...]


@dataclass(frozen=True)
class Ibstat:
    hcas: tuple[Hca, ...]
    problems: tuple[str, ...] = ()  # 'ibpanic: ...' / 'ibwarn: ...' lines: the output is partial

    def hca(self, name: str) -> Hca | None:
        return next((h for h in self.hcas if h.name == name), None)


_CA_RE = re.compile(r"^CA '([^']*)'\s*$")
_PORT_RE = re.compile(r"^\s+Port (\d+):\s*$")
_KV_RE = re.compile(r"^\s+([A-Za-z][A-Za-z ]*?):(.*)$")
_PROBLEM_RE = re.compile(r"^\s*(ibpanic|ibwarn|iberror)\b.*$")


def _rate(value: str | None) -> float | None:
    """'400' -> 400.0 Gb/s; None when not printed; a rate beyond any link is a ParseError."""
    rate = to_float(value)
    return None if rate is None else number(rate, "ibstat Rate", maximum=MAX_LINK_GBPS)


def _port(number: int, kv: dict[str, str]) -> IbPort:
    return IbPort(
        number=number,
        state=clean(kv.get("state")),
        physical_state=clean(kv.get("physical state")),
        rate=_rate(kv.get("rate")),
        base_lid=to_int(kv.get("base lid")),
        sm_lid=to_int(kv.get("sm lid")),
        lmc=to_int(kv.get("lmc")),
        port_guid=clean(kv.get("port guid")),
        capability_mask=clean(kv.get("capability mask")),
        link_layer=clean(kv.get("link layer")),
    )


@parser
def parse_ibstat(text: str) -> Ibstat:
    """``ibstat`` (all CAs). Text before the first ``CA '...'`` line is ignored."""
    hcas: list[Hca] = []
    problems: list[str] = []
    ca: dict | None = None
    port_kv: dict[str, str] | None = None
    port_no = 0
    cut_line = False

    def close_port() -> None:
        nonlocal port_kv
        if ca is not None and port_kv is not None:
            ca["ports"].append(_port(port_no, port_kv))
        port_kv = None

    def close_ca() -> None:
        nonlocal ca
        close_port()
        if ca is not None:
            kv = ca["kv"]
            hcas.append(
                Hca(
                    name=ca["name"],
                    ca_type=clean(kv.get("ca type")),
                    num_ports=to_int(kv.get("number of ports")),
                    firmware=clean(kv.get("firmware version")),
                    hardware_version=clean(kv.get("hardware version")),
                    node_guid=clean(kv.get("node guid")),
                    system_image_guid=clean(kv.get("system image guid")),
                    ports=tuple(ca["ports"]),
                )
            )
        ca = None

    # A substring test before each regex (one its every match holds) spares most lines three of them.
    for line in split_lines(text):
        cut_line = cut_line and not line.strip()
        if "ib" in line and (m := _PROBLEM_RE.match(line)):
            problems.append(m.group(0).strip())
        elif line.startswith("CA '") and (m := _CA_RE.match(line)):
            close_ca()
            ca = {"name": m.group(1), "kv": {}, "ports": []}
        elif ca is None:
            continue
        elif "Port " in line and (m := _PORT_RE.match(line)):
            close_port()
            port_no, port_kv = int(m.group(1)), {}
        elif (m := _KV_RE.match(line)) is not None:
            target = port_kv if port_kv is not None else ca["kv"]
            target.setdefault(m.group(1).lower(), m.group(2).strip())
        elif line.strip():
            cut_line = ca is not None  # the block's last line, if the text ends in it unfinished
            close_ca()  # something else (a prompt, another command's output) ends the CA
    if cut_line and not text.endswith(("\n", "\r")):
        raise ParseError("the output ends in a CA block, in a line it does not finish: it was cut")
    if ca is not None:
        _refuse_a_cut_block(ca, port_kv, port_no)
    elif text.rstrip().rpartition("\n")[2].startswith("CA '"):
        raise ParseError("the output ends in a CA line: it was cut")
    close_ca()
    if not hcas and not problems:
        raise ParseError("not ibstat output: no \"CA '...'\" block and no ibpanic line")
    return Ibstat(tuple(hcas), tuple(problems))


# ibstat ends each port with its link layer (infiniband-diags ibstat.c prints it last).
_LINK_LAYERS = ("InfiniBand", "Ethernet")


def _refuse_a_cut_block(ca: dict, port_kv: dict[str, str] | None, port_no: int) -> None:
    """The CA block the output ends in: whole when it holds its 'Number of ports' ports and its
    last port ends with a whole 'Link layer' line; else the output was cut inside it
    (docs/burnin.md, "A cut output")."""
    where = f"CA '{ca['name']}'"
    if port_kv is None:
        raise ParseError(f"the output ends in {where} before its ports: it was cut")
    if port_kv.get("link layer") not in _LINK_LAYERS:
        raise ParseError(f"the output ends in {where} port {port_no} before its link layer: it was cut")
    ports = to_int(ca["kv"].get("number of ports"))
    if ports is not None and len(ca["ports"]) + 1 < ports:
        raise ParseError(
            f"the output ends in {where} after {len(ca['ports']) + 1} of {ports} ports: it was cut"
        )


@dataclass(frozen=True)
class IbstatusPort:
    device: str  # 'mlx5_0'
    port: int
    default_gid: str | None
    base_lid: int | None  # '0x33bf' -> 13247
    sm_lid: int | None
    state: str | None  # 'ACTIVE', 'DOWN', 'INIT', 'ARMED'
    state_code: int | None  # 4 for ACTIVE
    phys_state: str | None  # 'LinkUp', 'Polling', 'Disabled'
    phys_state_code: int | None  # 5 for LinkUp
    rate: float | None  # Gb/s
    rate_text: str | None  # '4X HDR'
    link_layer: str | None


_IBSTATUS_HEAD_RE = re.compile(r"^Infiniband device '([^']*)' port (\d+) status:\s*$")


def _coded(value: str | None) -> tuple[int | None, str | None]:
    """'4: ACTIVE' -> (4, 'ACTIVE')."""
    if value is None:
        return None, None
    m = re.match(r"^\s*(\d+):(.*)$", value)
    if m:
        return int(m.group(1)), clean(m.group(2))
    return None, clean(value)


@parser
def parse_ibstatus(text: str) -> list[IbstatusPort]:
    """``ibstatus``: one record per ``Infiniband device 'X' port N status:`` block."""
    ports: list[IbstatusPort] = []
    head: tuple[str, int] | None = None
    kv: dict[str, str] = {}

    def close() -> None:
        if head is None:
            return
        state_code, state = _coded(kv.get("state"))
        phys_code, phys = _coded(kv.get("phys state"))
        rate = kv.get("rate")
        rate_text = re.search(r"\(([^()]*)\)", rate or "")
        ports.append(
            IbstatusPort(
                device=head[0],
                port=head[1],
                default_gid=clean(kv.get("default gid")),
                base_lid=to_int(kv.get("base lid")),
                sm_lid=to_int(kv.get("sm lid")),
                state=state,
                state_code=state_code,
                phys_state=phys,
                phys_state_code=phys_code,
                rate=to_float(rate),
                rate_text=rate_text.group(1) if rate_text else None,
                link_layer=clean(kv.get("link_layer")),
            )
        )

    for line in split_lines(text):
        if m := _IBSTATUS_HEAD_RE.match(line.strip()):
            close()
            head, kv = (m.group(1), int(m.group(2))), {}
        elif head is not None and (m := re.match(r"^\s+([a-z_ ]+?):(.*)$", line)):
            kv.setdefault(m.group(1).strip(), m.group(2).strip())
    close()
    if not ports:
        raise ParseError("not ibstatus output: no \"Infiniband device '...' port N status:\" block")
    return ports
