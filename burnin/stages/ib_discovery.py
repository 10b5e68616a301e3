"""The ib stage's discovery (pure): the script that lists a node's InfiniBand ports, and what
its answer says. ``ibstat`` (sysfs when ibstat is missing) lists each HCA port with its GUID,
LID, rate, state and link layer, and its HCA's CA type (ibstat's ``CA type``, sysfs ``hca_type``),
by which burnin/checks/ib_fabric.py tells the rails from a storage HCA; ``ib_write_bw --help``
says whether this perftest writes ``--out_json``; the first node also runs ``ibnetdiscover -p``
when it has it, so findings can name the switch port at the other end of a cable.
burnin.stages.ib sends the scripts, over SSH or as one Slurm job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from burnin.checks.base import CommandOutput
from burnin.checks.ib_load import IbPortInfo
from burnin.parsers import ParseError
from burnin.parsers.ibnetdiscover import IbnetPort, parse_ibnetdiscover_ports, switch_port_for
from burnin.parsers.ibstat import parse_ibstat
from burnin.parsers.sysfs import parse_ib_sysfs
from burnin.stages.batch import Job, build_script, parse_output

DISCOVERY_TIME_LIMIT_S = 180
_SYSFS_PORTS = (
    "grep -H . /sys/class/infiniband/*/ports/*/state /sys/class/infiniband/*/ports/*/phys_state "
    "/sys/class/infiniband/*/ports/*/rate /sys/class/infiniband/*/ports/*/link_layer "
    "/sys/class/infiniband/*/ports/*/lid /sys/class/infiniband/*/node_guid "
    "/sys/class/infiniband/*/hca_type 2>/dev/null; true"
)
_PERFTEST_CAPS = (
    "command -v ib_write_bw >/dev/null || { echo 'ib_write_bw: not installed' >&2; exit 127; }\n"
    "ib_write_bw --help 2>&1 | grep -c -e '--out_json'; true"
)


@dataclass
class Discovery:
    ports: list[IbPortInfo] = field(default_factory=list)
    out_json: bool = False
    has_perftest: bool = True
    problem: str = ""  # no port list: why
    evidence: str = ""
    fabric: list[IbnetPort] | None = None


def discovery_jobs(with_fabric: bool) -> list[Job]:
    jobs = [Job("ibstat", "ibstat", 60), Job("sysfs", _SYSFS_PORTS, 30), Job("perftest", _PERFTEST_CAPS, 30)]
    if with_fabric:
        jobs.append(Job("fabric", "command -v ibnetdiscover >/dev/null || exit 127\nibnetdiscover -p", 120))
    return jobs


def _section(title: str, output: CommandOutput) -> str:
    text = f"== {title} (exit status {output.rc}) ==\n{output.stdout}"
    if output.stderr.strip():
        text += f"-- stderr --\n{output.stderr}"
    if output.error:
        text += f"-- {output.error} --\n"
    return text


def parse_discovery(node: str, outputs: Mapping[str, CommandOutput]) -> Discovery:
    """The node's ports from its discovery answers (pure)."""
    found = Discovery()
    ibstat, sysfs = outputs["ibstat"], outputs["sysfs"]
    found.evidence = _section("ibstat", ibstat)
    try:
        report = parse_ibstat(ibstat.stdout)
        for hca in report.hcas:
            for p in hca.ports:
                found.ports.append(
                    IbPortInfo(
                        node,
                        hca.name,
                        p.number,
                        p.port_guid,
                        p.base_lid,
                        p.rate,
                        p.link_layer,
                        p.state,
                        p.physical_state,
                        ca_type=hca.ca_type,
                    )  # fmt: skip
                )
    except ParseError as exc:
        found.evidence += _section("sysfs", sysfs)
        try:
            for dev in parse_ib_sysfs(sysfs.stdout).values():
                for number, p in sorted(dev.ports.items()):
                    state = p.state.capitalize() if p.state else None
                    found.ports.append(
                        IbPortInfo(
                            node,
                            dev.name,
                            number,
                            None,
                            None,
                            p.rate,
                            p.link_layer,
                            state,
                            p.phys_state,
                            ca_type=dev.hca_type,
                        )  # fmt: skip
                    )
        except ParseError:
            detail = ibstat.stderr.strip().splitlines()[-1:] or [str(exc)]
            found.problem = f"could not list the InfiniBand ports: ibstat: {detail[0][:160]}; no sysfs ports"
    caps = outputs["perftest"]
    found.has_perftest = caps.rc == 0
    found.out_json = caps.rc == 0 and caps.stdout.strip().isdigit() and int(caps.stdout.strip()) > 0
    if "fabric" in outputs and outputs["fabric"].rc == 0:
        try:
            found.fabric = parse_ibnetdiscover_ports(outputs["fabric"].stdout)
        except ParseError:
            found.fabric = None
    return found


def discovery_scripts(names: Iterable[str]) -> dict[str, tuple[str, str, list[str]]]:
    """node -> (its discovery script, frame token, keys); the first node also maps the fabric."""
    first = min(names, default=None)
    scripts = {}
    for name in sorted(names):
        script, token = build_script(discovery_jobs(name == first))
        scripts[name] = (script, token, [j.key for j in discovery_jobs(name == first)])
    return scripts


def discovered(node: str, plan: tuple[str, str, list[str]], raw: bytes, error: str) -> Discovery:
    if error and not raw:
        return Discovery(problem=f"could not reach the node: {error}")
    return parse_discovery(node, parse_output(raw, plan[1], plan[2]))


def with_switch_ports(ports: list[IbPortInfo], fabric: list[IbnetPort] | None) -> list[IbPortInfo]:
    if not fabric:
        return ports
    out = []
    for p in ports:
        link = switch_port_for(fabric, p.guid)
        if link is None:
            out.append(p)
            continue
        out.append(
            replace(
                p,
                switch_port=link.peer_text(),
                switch_lid=link.peer_lid,
                switch_port_number=link.peer_port,
                switch_guid=link.peer_guid,
                switch_name=link.peer_name,
            )
        )
    return out
