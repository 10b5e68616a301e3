"""The XGMI (Infinity Fabric) links between AMD Instinct GPUs, in the preflight (docs/platforms.md,
MI300X): every GPU pair must talk over XGMI, and every GPU's links must run at the profile's rate.

An MI300X baseboard joins its 8 OAM GPUs all to all, one x16 XGMI link per pair (AMD's MI300X
page: https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html). Two readings of
amd-smi say whether that holds (the layouts of
https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md, "Added XGMI table" and "Topology is now
left-aligned"):

- `amd-smi topology`: per GPU pair, the ACCESS (peer access ENABLED) and the LINK TYPE (XGMI; a
  pair over PCIE is a pair whose XGMI link is down, and its traffic crawls through the host);
- `amd-smi xgmi`: per GPU, its link type, bit rate (Gb/s per lane) and max bandwidth; a link that
  trained at a lower rate moves less.

A GPU pair whose link is down fails the node with RESEAT (the OAM module or the baseboard); the
same GPU in every bad pair is the part named.
"""

from __future__ import annotations

from collections import Counter

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service, section_mark, sections
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.amd_smi import Topology, XgmiLink, parse_topology, parse_xgmi
from burnin.result import Action, Finding, Result, critical

AMD_XGMI = "amd-smi xgmi"
AMD_TOPOLOGY = "amd-smi topology"
TOPOLOGY = "topology"
END = "end"


def _parts(stdout: str) -> tuple[str, str, bool]:
    """The xgmi table, the topology tables, and whether the command's end mark was seen. A bare
    output handed to `burnin evaluate` is one of the two: told by its headings."""
    parts = sections(stdout)
    first = parts[""]
    if TOPOLOGY not in parts and "LINK METRIC TABLE" not in first:
        return "", first, END in parts
    return first, parts.get(TOPOLOGY, ""), END in parts


def _xgmi_findings(links: list[XgmiLink], profile: Profile) -> tuple[list[Finding], list[str]]:
    findings: list[Finding] = []
    doubts: list[str] = []
    rate, bandwidth = profile.gpu.xgmi_bit_rate_gbps, profile.gpu.xgmi_max_bandwidth_gbps
    for link in links:
        subject = f"GPU {link.gpu}"
        where = f"{subject} ({link.bdf})"
        shown = (
            f"GPU{link.gpu} {link.bdf} bit_rate {link.bit_rate_gbps} max_bandwidth "
            f"{link.max_bandwidth_gbps} link_type {link.link_type}"
        )
        if link.link_type != "XGMI":
            findings.append(
                critical(
                    f"{where} reaches its peers over {link.link_type}, not XGMI: its Infinity Fabric links "
                    "are down (reseat the GPU module; a repeat is the baseboard)",
                    Action.RESEAT,
                    shown,
                    subject,
                )
            )
            continue
        for figure, value, floor in (
            ("bit rate", link.bit_rate_gbps, rate),
            ("max bandwidth", link.max_bandwidth_gbps, bandwidth),
        ):
            if floor is None:
                continue
            if value is None:
                doubts.append(f"{where} prints no XGMI {figure} (N/A)")
            elif value < floor:
                findings.append(
                    critical(
                        f"{where} XGMI {figure} {value:g} Gb/s, below the profile's {floor:g}: a link "
                        "trained slow (reseat the GPU module)",
                        Action.RESEAT,
                        shown,
                        subject,
                    )
                )
    return findings, doubts


def _pair_findings(topology: Topology) -> list[Finding]:
    """A finding per GPU pair not joined by XGMI with peer access; a GPU in every bad pair is named
    alone (its links are down), otherwise each pair is."""
    index = {bdf: i for i, bdf in enumerate(topology.bdfs)}
    bad: dict[tuple[str, str], str] = {}
    for a in topology.bdfs:
        for b in topology.bdfs:
            if index[a] >= index[b]:
                continue
            kinds = {topology.cell("LINK TYPE", a, b), topology.cell("LINK TYPE", b, a)} - {None}
            access = {topology.cell("ACCESS", a, b), topology.cell("ACCESS", b, a)} - {None}
            if kinds and kinds != {"XGMI"}:
                bad[(a, b)] = f"link type {'/'.join(sorted(kinds))}"
            elif access and access != {"ENABLED"}:
                bad[(a, b)] = f"peer access {'/'.join(sorted(access))}"
    if not bad:
        return []
    per_gpu = Counter(bdf for pair in bad for bdf in pair)
    peers = len(topology.bdfs) - 1
    whole = [bdf for bdf, n in per_gpu.items() if n == peers and peers > 1]
    findings = []
    for bdf in whole:
        findings.append(
            critical(
                f"GPU {index[bdf]} ({bdf}) has no XGMI link to any of its {peers} peers: its Infinity Fabric "
                "links are down (reseat the GPU module; a repeat is the GPU or the baseboard)",
                Action.RESEAT,
                "; ".join(f"{a} {b}: {why}" for (a, b), why in bad.items() if bdf in (a, b)),
                f"GPU {index[bdf]}",
            )
        )
    for (a, b), why in bad.items():
        if a in whole or b in whole:
            continue
        findings.append(
            critical(
                f"GPU {index[a]} ({a}) and GPU {index[b]} ({b}) are not joined by XGMI ({why}): the link "
                "between them is down (reseat both modules; a repeat is the baseboard)",
                Action.RESEAT,
                f"{a} {b}: {why}",
                f"GPU {index[a]}",
            )
        )
    return findings


@register
class AmdXgmiLinks(Check):
    name = "amd_xgmi_links"
    stages = ("preflight",)
    service = Service.ALWAYS  # link states and rates, read-only: a link dropping in service drains
    reads = (AMD_XGMI, AMD_TOPOLOGY)
    judges = ("gpu.count", "gpu.xgmi_bit_rate_gbps", "gpu.xgmi_max_bandwidth_gbps")
    timeout_s = 90
    description = (
        "every AMD GPU pair joined by XGMI with peer access (amd-smi topology), every GPU's XGMI links "
        "at the profile's bit rate and bandwidth (amd-smi xgmi)"
    )

    def applies(self, profile: Profile) -> bool:
        return profile.gpu.count > 1  # one GPU has no peer to link to

    def command(self, profile: Profile) -> str:
        # amd-smi prints no end: the mark after both says neither was cut between two rows.
        return "\n".join(
            [
                AMD_XGMI,
                "rc=$?",
                section_mark(TOPOLOGY),
                AMD_TOPOLOGY,
                "rc=$((rc | $?))",
                section_mark(END),
                "exit $rc",
            ]
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        xgmi_text, topology_text, whole = _parts(output.stdout)
        if not xgmi_text.strip() and not topology_text.strip():
            raise ParseError("neither an amd-smi xgmi table nor amd-smi topology tables")
        findings: list[Finding] = []
        reasons: list[str] = []
        want = profile.gpu.count
        metrics: dict[str, object] = {}
        if xgmi_text.strip():
            links = parse_xgmi(xgmi_text)
            found, doubts = _xgmi_findings(links, profile)
            findings += found
            reasons += doubts
            metrics["xgmi_bit_rate_gbps"] = {f"GPU {x.gpu}": x.bit_rate_gbps for x in links}
            if len(links) < want:
                reasons.append(f"the XGMI table shows {len(links)} GPU(s), the profile has {want}")
        else:
            reasons.append("no amd-smi xgmi table: the link rates are not shown")
        if topology_text.strip():
            topology = parse_topology(topology_text)
            if "LINK TYPE" not in topology.tables:
                reasons.append("amd-smi topology shows no LINK TYPE TABLE")
            findings += _pair_findings(topology)
            if len(topology.bdfs) < want:
                reasons.append(f"amd-smi topology shows {len(topology.bdfs)} GPU(s), the profile has {want}")
        else:
            reasons.append("no amd-smi topology tables: the GPU pairs are not shown")
        if not whole:
            reasons.append("the output has no end: it may be cut between two rows")
        # Fewer GPUs than the profile is amd_gpu_inventory's failure (it counts them); here it is
        # only a pass not shown.
        return Result.judged(self.name, findings, metrics, incomplete="; ".join(reasons))
