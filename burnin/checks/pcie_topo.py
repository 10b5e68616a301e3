"""GPU-to-NIC affinity: ``nvidia-smi topo -m`` against the profile's pairs (``pcie.gpu_nics``).

Each GPU's own NIC must sit behind the same PCIe switch: PIX (at most one bridge) or PXB (several
bridges, no host bridge) in the matrix's legend. A pair at PHB, NODE or SYS sends GPUDirect RDMA
through the CPU's host bridge or across the CPU interconnect, at a fraction of the NIC's rate;
AzNHC checks the same topology before its GPUDirect bandwidth test
(https://github.com/Azure/azurehpc-health-checks). Two faults are told apart and named: a NIC in
the wrong slot (the GPU has another NIC beside it, and the profile's NIC is elsewhere), and a GPU
whose nearest NIC is across the CPU link (no NIC at PIX or PXB at all). A row whose cells are not
the legend's links (a copy whose tabs were lost) is not read: its GPU is UNKNOWN, not blamed.
"""

from __future__ import annotations

import re

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.checks.gpu_smi_failure import smi_failure_result
from burnin.checks.registry import register
from burnin.parsers.nvidia_smi import Topology, parse_topology
from burnin.result import Action, Finding, Result, critical, info

NEAR = ("PIX", "PXB")
# Nearest first (the legend's order, nvidia-smi topo -m); NV# and X are not PCIe paths to a NIC.
_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
NONE = "-"


def _nics(topo: Topology) -> dict[str, str]:
    """RDMA name (mlx5_0) -> the matrix's label for it (NIC0, or mlx5_0 on older drivers)."""
    labels = [d for d in topo.devices if not d.startswith("GPU")]
    return {topo.nic_legend.get(label, label): label for label in labels}


def judge_affinity(topo: Topology, expected: tuple[str, ...]) -> tuple[list[Finding], dict, list[str]]:
    """Findings, metrics and what could not be judged (a GPU the matrix lacks)."""
    nics = _nics(topo)
    gpus = [d for d in topo.devices if d.startswith("GPU") and d in topo.matrix]
    findings: list[Finding] = []
    missing: list[str] = []
    unnamed = sorted(lb for name, lb in nics.items() if name == lb and re.fullmatch(r"NIC\d+", lb))
    pairs: dict[str, dict[str, str | None]] = {}
    for index, want in enumerate(expected):
        gpu = f"GPU{index}"
        if want == NONE:
            continue
        if gpu in topo.damaged:  # a saved copy whose cells ran together: no link can be read
            missing.append(f"{gpu}'s row cannot be read ({topo.damaged[gpu]})")
            continue
        if gpu not in gpus:
            missing.append(f"{gpu} is not in the matrix")
            continue
        row = topo.matrix[gpu]
        near = {name: row.get(label, "") for name, label in nics.items() if row.get(label, "") in NEAR}
        label = nics.get(want)
        link = row.get(label) if label else None
        pairs[gpu] = {"nic": want, "link": link}
        if label is None and unnamed:
            # NICn without the legend that names them (a cut output): which is mlx5_0 is unknown.
            missing.append(f"{gpu}: {want} cannot be found: {', '.join(unnamed)} without the NIC Legend")
            continue
        if label is None:
            beside = f"; {', '.join(f'{n} ({v})' for n, v in sorted(near.items()))} beside it" if near else ""
            findings.append(
                critical(
                    f"{gpu}: its NIC {want} is not in the matrix{beside}",
                    Action.RESEAT,
                    "",
                    f"{gpu} / {want}",
                )
            )
        elif link in NEAR:
            continue
        elif near:
            others = ", ".join(f"{n} ({v})" for n, v in sorted(near.items()))
            findings.append(
                critical(
                    f"{gpu}: its NIC {want} is at {link}, not behind its PCIe switch; {others} is: "
                    f"a NIC in the wrong slot (or cabled to the wrong rail)",
                    Action.RESEAT,
                    f"{gpu} -> {label}: {link}",
                    f"{gpu} / {want}",
                )
            )
        else:
            ranked = sorted(
                ((v, n) for n, lb in nics.items() if (v := row.get(lb, "")) in _RANK),
                key=lambda p: _RANK[p[0]],
            )
            best = f"; nearest: {ranked[0][1]} at {ranked[0][0]}" if ranked else ""
            findings.append(
                critical(
                    f"{gpu}: its NIC {want} is at {link}: no NIC behind its PCIe switch, so GPUDirect RDMA "
                    f"crosses the CPU link{best}",
                    Action.RESEAT,
                    f"{gpu} -> {label}: {link}",
                    f"{gpu} / {want}",
                )
            )
    extra = [g for g in gpus if int(g[3:]) >= len(expected)]
    if extra:
        findings.append(
            info(
                f"{', '.join(extra)} not in the profile's pcie.gpu_nics: not judged", subject=", ".join(extra)
            )
        )
    return findings, {"pairs": pairs, "nics": sorted(nics)}, missing


@register
class GpuNicAffinity(Check):
    name = "gpu_nic_affinity"
    description = "Each GPU's own NIC behind its PCIe switch (PIX/PXB in nvidia-smi topo -m)"
    stages = ("pcie",)
    reads = ("nvidia-smi topo -m",)
    judges = ("pcie.gpu_nics",)

    def applies(self, profile: Profile) -> bool:
        return bool(profile.pcie.gpu_nics)

    def command(self, profile: Profile) -> str:
        return "nvidia-smi topo -m"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):  # nvidia-smi answered only an error
            return failed
        expected = tuple(profile.pcie.gpu_nics)
        if not expected:
            return Result.unknown(self.name, "the profile names no GPU-to-NIC pairs (pcie.gpu_nics)")
        findings, metrics, missing = judge_affinity(parse_topology(output.stdout), expected)
        return Result.judged(self.name, findings, metrics, incomplete="; ".join(missing))
