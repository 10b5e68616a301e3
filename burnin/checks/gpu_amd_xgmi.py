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

Where amd-smi is not installed, or `amd-smi topology` does not answer (ROCm before 6), the command
runs `rocm-smi --showtopo` instead (as burnin/checks/gpu_amd.py falls back), whose 'Link Type
between two GPUs' table says XGMI or PCIE per pair: a pair over PCIE is judged as amd-smi's is.
rocm-smi prints no link rate and no peer access, so its PASS is one of the link types alone: the
profile's rate figures are listed as not covered, and an info finding says so (docs/platforms.md,
MI300X).
"""

from __future__ import annotations

from collections import Counter

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service, section_mark, sections
from burnin.checks.gpu_amd import NO_AMD_SMI, ROCM_SMI, rocm_smi_instead
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.amd_smi import Topology, XgmiLink, parse_topology, parse_xgmi
from burnin.parsers.rocm_smi import LINK_TYPE, UNREAD, RocmTopology, is_rocm_smi, parse_showtopo
from burnin.result import Action, Finding, Result, critical, info

AMD_XGMI = "amd-smi xgmi"
AMD_TOPOLOGY = "amd-smi topology"
ROCM_TOPOLOGY = "rocm-smi --showtopo"
TOPOLOGY = "topology"
END = "end"
RATES = ("gpu.xgmi_bit_rate_gbps", "gpu.xgmi_max_bandwidth_gbps")
ACCESS = "Link accessibility"  # rocm-smi --showtopoaccess's table, where a handed-in log has it


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


def _amd_bad_pairs(topology: Topology) -> dict[tuple[str, str], str]:
    """Each GPU pair of amd-smi topology not joined by XGMI with peer access, and why."""
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
    return bad


def _pair_findings(bad: dict[tuple[str, str], str], gpus: dict[str, tuple[int, str]]) -> list[Finding]:
    """A finding per bad GPU pair (keyed by the names the tool prints: BDFs, GPU0...); a GPU in
    every bad pair is named alone (its links are down), otherwise each pair is. ``gpus``: each
    name's index and how a message shows it ('GPU 2 (0000:38:00.0)', 'GPU 2'), in the tool's order."""
    if not bad:
        return []
    per_gpu = Counter(name for pair in bad for name in pair)
    peers = len(gpus) - 1
    whole = [name for name, n in per_gpu.items() if n == peers and peers > 1]
    findings = []
    for name in whole:
        index, where = gpus[name]
        findings.append(
            critical(
                f"{where} has no XGMI link to any of its {peers} peers: its Infinity Fabric "
                "links are down (reseat the GPU module; a repeat is the GPU or the baseboard)",
                Action.RESEAT,
                "; ".join(f"{a} {b}: {why}" for (a, b), why in bad.items() if name in (a, b)),
                f"GPU {index}",
            )
        )
    for (a, b), why in bad.items():
        if a in whole or b in whole:
            continue
        findings.append(
            critical(
                f"{gpus[a][1]} and {gpus[b][1]} are not joined by XGMI ({why}): the link "
                "between them is down (reseat both modules; a repeat is the baseboard)",
                Action.RESEAT,
                f"{a} {b}: {why}",
                f"GPU {gpus[a][0]}",
            )
        )
    return findings


def _rocm_result(name: str, topology: RocmTopology, why: str, profile: Profile) -> Result:
    """rocm-smi's link types judged as amd-smi's; what it cannot show is said, never passed on."""
    gpus = {f"GPU{i}": (i, f"GPU {i}") for i in topology.gpus}
    bad: dict[tuple[str, str], str] = {}
    unread: list[str] = []
    for a in topology.gpus:
        for b in topology.gpus:
            if a >= b:
                continue
            kinds = {topology.cell(LINK_TYPE, a, b), topology.cell(LINK_TYPE, b, a)} - {None}
            access = {topology.cell(ACCESS, a, b), topology.cell(ACCESS, b, a)}
            access -= {None}
            if kinds - UNREAD and kinds - UNREAD != {"XGMI"}:
                bad[(f"GPU{a}", f"GPU{b}")] = f"link type {'/'.join(sorted(kinds - UNREAD))}"
            elif access and access != {"True"}:
                bad[(f"GPU{a}", f"GPU{b}")] = f"peer access {'/'.join(sorted(access))}"
            elif kinds & UNREAD:
                unread.append(f"GPU {a} - GPU {b}")
    findings = _pair_findings(bad, gpus)
    reasons = []
    if unread:
        reasons.append(
            f"rocm-smi could not read the link type of {len(unread)} pair(s): {', '.join(unread[:4])}"
        )
    if len(topology.gpus) < profile.gpu.count:
        reasons.append(f"rocm-smi shows {len(topology.gpus)} GPU(s), the profile has {profile.gpu.count}")
    rates = (profile.gpu.xgmi_bit_rate_gbps, profile.gpu.xgmi_max_bandwidth_gbps)
    floors = [field for field, floor in zip(RATES, rates, strict=True) if floor is not None]
    said = f"amd-smi did not answer ({why}), so {name} was read" if why else f"a {name} output was read"
    unshown = "XGMI bit rate or bandwidth" + ("" if ACCESS in topology.tables else ", nor peer access")
    findings.append(
        info(
            f"{said}: the link type of every GPU pair is judged; rocm-smi prints no {unshown}, so "
            "they are not"
            + (
                f" (not covered: {', '.join(floors)}; rccl-tests in the gpu stage load the links)"
                if floors
                else ""
            ),
            f"{len(topology.gpus)} GPUs in the Link Type table",
        )
    )
    metrics = {
        "tool": "rocm-smi",
        "xgmi_pairs": sum(
            1
            for a in topology.gpus
            for b in topology.gpus
            if a < b and topology.cell(LINK_TYPE, a, b) == "XGMI"
        ),
    }
    return Result.judged(
        "amd_xgmi_links", findings, metrics, incomplete="; ".join(reasons), not_covered=floors
    )


@register
class AmdXgmiLinks(Check):
    name = "amd_xgmi_links"
    stages = ("preflight",)
    service = Service.ALWAYS  # link states and rates, read-only: a link dropping in service drains
    reads = (AMD_XGMI, AMD_TOPOLOGY, ROCM_TOPOLOGY)
    judges = ("gpu.count", "gpu.xgmi_bit_rate_gbps", "gpu.xgmi_max_bandwidth_gbps")
    timeout_s = 90
    description = (
        "every AMD GPU pair joined by XGMI with peer access (amd-smi topology), every GPU's XGMI links "
        "at the profile's bit rate and bandwidth (amd-smi xgmi); else each pair's link type alone "
        "(rocm-smi --showtopo)"
    )

    def applies(self, profile: Profile) -> bool:
        return profile.gpu.count > 1  # one GPU has no peer to link to

    def command(self, profile: Profile) -> str:
        # amd-smi answers when its topology does (the pairs; the rates alone judge no pair): its
        # output stands as before, and amd-smi prints no end, so the mark after both says neither
        # was cut between two rows. Else rocm-smi, in its own section (gpu_amd.rocm_smi_instead).
        return "\n".join(
            [
                "if command -v amd-smi >/dev/null 2>&1; then",
                f"  xgmi=$({AMD_XGMI}); xrc=$?",
                f"  topo=$({AMD_TOPOLOGY}); trc=$?",
                '  if [ "$trc" -eq 0 ] && [ -n "$topo" ]; then',
                "    printf '%s\\n' \"$xgmi\"",
                f"    {section_mark(TOPOLOGY)}",
                "    printf '%s\\n' \"$topo\"",
                f"    {section_mark(END)}",
                "    exit $xrc",
                "  fi",
                '  why="amd-smi topology exited $trc"',
                '  [ -n "$topo" ] || why="$why and printed nothing"',
                "else",
                '  why="amd-smi is not installed"',
                "fi",
                *rocm_smi_instead(ROCM_TOPOLOGY),
            ]
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        parts = sections(output.stdout)
        if ROCM_SMI in parts or is_rocm_smi(parts[""]) or "between two GPUs" in parts[""]:
            # rocm-smi answered instead (a bare log is told by its header, end or table titles,
            # which amd-smi never prints); its end line tells a whole log from a cut one, so the
            # parser refuses one without it.
            why = parts.get(NO_AMD_SMI, "").strip()
            text = parts.get(ROCM_SMI, parts[""])
            try:
                topology = parse_showtopo(text)
            except ParseError as exc:
                raise ParseError(f"amd-smi did not answer ({why}); {exc}" if why else str(exc)) from exc
            return _rocm_result(ROCM_TOPOLOGY, topology, why, profile)
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
            where = {bdf: (i, f"GPU {i} ({bdf})") for i, bdf in enumerate(topology.bdfs)}
            findings += _pair_findings(_amd_bad_pairs(topology), where)
            if len(topology.bdfs) < want:
                reasons.append(f"amd-smi topology shows {len(topology.bdfs)} GPU(s), the profile has {want}")
        else:
            reasons.append("no amd-smi topology tables: the GPU pairs are not shown")
        if not whole:
            reasons.append("the output has no end: it may be cut between two rows")
        # Fewer GPUs than the profile is amd_gpu_inventory's failure (it counts them); here it is
        # only a pass not shown.
        return Result.judged(self.name, findings, metrics, incomplete="; ".join(reasons))
