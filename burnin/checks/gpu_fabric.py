"""Each GPU's NVLink fabric registration (preflight and in service), from the Fabric section of the
`nvidia-smi -q` the other GPU checks read (burnin/checks/gpu.py), or of a bare Fabric excerpt of
it handed to `burnin evaluate` (judged as shown, never a pass: the other GPUs are unseen)."""

from __future__ import annotations

from collections import Counter

from bringup.profiles.load import Profile
from burnin.checks.base import CommandOutput, Service
from burnin.checks.gpu import SmiQueryCheck, _query, _where
from burnin.checks.gpu_smi_failure import smi_failure_result
from burnin.checks.registry import register
from burnin.parsers.nvidia_smi import FabricBlock, GpuQuery, parse_fabric_excerpt
from burnin.result import Action, Finding, Result, critical, warning

FABRIC_EXCERPT = "nvidia-smi -q (Fabric excerpt)"  # the tool's name in burnin/evaluate/markers.py
# Health summaries and bandwidth states that are no finding: NVML's healthy ones, and what a driver
# prints for a GPU that does not report fabric health (HGX H100, drivers before 550).
FABRIC_FINE = {"Healthy", "Full", "Not Supported"}
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
WHOLE_STATES = ("Completed", "Success")  # a registered GPU's State and Status


@register
class GpuFabricState(SmiQueryCheck):
    """Each GPU's Fabric section of `nvidia-smi -q`. On NVSwitch systems a GPU registers with the
    fabric (the fabric manager on HGX; NVLink Subnet Manager and IMEX on GB200/GB300 NVL72) before
    CUDA may use NVLink, then reports State (Not Started, In Progress, Completed) and Status, and on
    multi-node NVLink the domain it joined (CliqueId, ClusterUUID) with a health summary (NVML's
    nvmlGpuFabricInfo_v3_t: https://docs.nvidia.com/deploy/nvml-api/structnvmlGpuFabricInfo__v3__t.html).
    Completed with a failed Status passes a check of the fabric manager's service alone
    (https://github.com/Azure/azhpc-images/pull/506)."""

    name = "gpu_fabric_state"
    service = Service.ALWAYS
    reads = (*SmiQueryCheck.reads, FABRIC_EXCERPT)
    judges = ("gpu.nvswitch", "gpu.multi_node_nvlink")
    description = (
        "every GPU registered with the NVLink fabric: Completed with Success, one NVLink domain, healthy"
    )

    def applies(self, profile: Profile) -> bool:
        return profile.gpu.nvswitch

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed  # nvidia-smi answered only an error (burnin/checks/gpu_smi_failure.py)
        # A bare Fabric excerpt shows some GPUs' blocks, not which GPUs, nor the others: what it
        # shows is judged, a failure stands, and it cannot pass (docs/burnin.md, "A cut output").
        excerpt = _excerpt_blocks(output.stdout)
        gpus: list[GpuQuery] | list[FabricBlock]
        if excerpt is not None:
            gpus = list(excerpt)
            places = [f"the GPU of Fabric block {i + 1}" for i in range(len(gpus))]
            cut = "a bare Fabric excerpt of nvidia-smi -q: the node's other GPUs are unseen"
        else:
            gpus = list(_query(output).gpus)
            places = [_where(i, g) for i, g in enumerate(gpus)]
            cut = ""
        if not any(g.fabric_state for g in gpus):
            return Result.unknown(self.name, "no GPU reports a fabric state (N/A or no Fabric section)")
        findings: list[Finding] = []
        unreported: list[str] = []
        domains: Counter[tuple[str, str]] = Counter()
        for where, gpu in zip(places, gpus, strict=True):
            state, status = gpu.fabric_state, gpu.fabric_status
            shown = f"Fabric State: {state or 'N/A'}, Status: {status or 'N/A'}"
            if state is None:
                unreported.append(where)
            elif state in ("Not Started", "In Progress"):
                findings.append(
                    critical(
                        f"{where} has not completed registering with the NVLink fabric ({state}): CUDA cannot "
                        "use NVLink; restart the fabric manager (NVLink Subnet Manager on NVL72), then reboot",
                        Action.RECONFIGURE,
                        shown,
                        where,
                    )
                )
            elif state != "Completed" or status != "Success":
                findings.append(
                    critical(
                        f"{where} fabric registration ended {state}, {status or 'no status'}: reboot; if it "
                        "stays, the NVLink tray or its cables",
                        Action.REBOOT,
                        shown,
                        where,
                    )
                )
            else:
                findings += _fabric_domain(where, gpu, domains) + _fabric_health(where, gpu)
        if profile.gpu.multi_node_nvlink and ("none", ZERO_UUID) in domains:
            n = domains[("none", ZERO_UUID)]
            findings.append(
                critical(
                    f"{n} GPU(s) joined no multi-node NVLink domain (CliqueId 0, zero ClusterUUID), which "
                    "the profile requires (gpu.multi_node_nvlink): the tray did not register with the "
                    "rack's NVLink fabric; reboot, then check its NVLink switch trays and cables",
                    Action.REBOOT,
                    f"CliqueId: 0, ClusterUUID: {ZERO_UUID}",
                )
            )
        if len(domains) > 1:
            seen = ", ".join(f"clique {c} of {u} ({n} GPUs)" for (c, u), n in sorted(domains.items()))
            findings.append(
                critical(f"the node's GPUs are in different NVLink domains: {seen}", Action.REBOOT, seen)
            )
        if profile.gpu.multi_node_nvlink and (silent := _no_domain_shown(gpus)):
            findings.append(silent)
        metrics: dict = {"states": dict(Counter(g.fabric_state or "N/A" for g in gpus))}
        if len(domains) == 1 and ("none", ZERO_UUID) not in domains:
            ((metrics["clique_id"], metrics["cluster_uuid"]),) = domains
        incomplete = "; ".join(
            why
            for why in (f"no fabric state reported for {', '.join(unreported)}" if unreported else "", cut)
            if why
        )
        return Result.judged(self.name, findings, metrics, incomplete=incomplete)


def _excerpt_blocks(text: str) -> tuple[FabricBlock, ...] | None:
    """The Fabric blocks of a bare excerpt (None: not one). An excerpt has no end of its own, so
    its last line without a newline may be cut: one whose value begins a value that is no finding
    ('Summary : Heal' of 'Healthy') is left out, lest a cut word fail a healthy GPU; any other
    value is judged (a cut 'Unhe' of 'Unhealthy' fails as the whole word would)."""
    blocks = parse_fabric_excerpt(text)
    if blocks is None or text.endswith("\n"):
        return blocks
    head, _, last = text.rpartition("\n")
    value = last.partition(":")[2].strip()
    if value and any(fine != value and fine.startswith(value) for fine in (*FABRIC_FINE, *WHOLE_STATES)):
        return parse_fabric_excerpt(head + "\n")
    return blocks


def _fabric_domain(
    where: str, gpu: GpuQuery | FabricBlock, domains: Counter[tuple[str, str]]
) -> list[Finding]:
    """Count the NVLink domain the GPU joined. CliqueId 0 with a zero ClusterUUID is what NVML
    reports for a GPU outside any multi-node NVLink domain (an HGX H100 or H200 on drivers 550+:
    https://github.com/meta-pytorch/torchcomms/pull/1385), so it is a domain of its own here,
    "none": a node whose GPUs are all outside one passes, and one split between "none" and a real
    domain fails below. Whether a node must be in a multi-node domain is the profile's to say."""
    clique, cluster = gpu.fabric_clique_id, gpu.fabric_cluster_uuid
    if clique is None and cluster is None:
        return []  # drivers before 550 print no domain at all: nothing to count
    if clique in (None, "0") and cluster in (None, ZERO_UUID):
        domains[("none", ZERO_UUID)] += 1
    elif clique in (None, "0") or cluster in (None, ZERO_UUID):
        shown = f"CliqueId: {clique or 'N/A'}, ClusterUUID: {cluster or 'N/A'}"
        return [
            critical(
                f"{where} reports half an NVLink domain ({shown}): reboot, then check the NVLink tray",
                Action.REBOOT,
                shown,
                where,
            )
        ]
    else:
        domains[(clique, cluster)] += 1
    return []


def _fabric_health(where: str, gpu: GpuQuery | FabricBlock) -> list[Finding]:
    summary, bandwidth = gpu.fabric_health, gpu.fabric_bandwidth
    found: list[Finding] = []
    if summary is not None and summary not in FABRIC_FINE:
        found.append(
            critical(
                f"{where} NVLink fabric health is {summary}",
                Action.REBOOT,
                f"Health Summary: {summary}",
                where,
            )
        )
    if bandwidth is not None and bandwidth not in FABRIC_FINE:
        found.append(
            warning(
                f"{where} NVLink fabric bandwidth is {bandwidth}: a link or switch plane is down",
                Action.MONITOR,
                f"Health Bandwidth: {bandwidth}",
                where,
            )
        )
    return found


def _no_domain_shown(gpus: list[GpuQuery] | list[FabricBlock]) -> Finding | None:
    """On a profile that requires a multi-node NVLink domain, registered GPUs that print no CliqueId
    and no ClusterUUID (drivers before 550: docs/burnin.md): nothing shows they joined the rack's
    domain, so they fail as a tray in none would."""
    silent = [
        g
        for g in gpus
        if g.fabric_state == "Completed"
        and g.fabric_status == "Success"
        and g.fabric_clique_id is None
        and g.fabric_cluster_uuid is None
    ]
    if not silent:
        return None
    return critical(
        f"{len(silent)} GPU(s) registered with the NVLink fabric but report no CliqueId or ClusterUUID, "
        "which the profile requires (gpu.multi_node_nvlink): install the driver the profile pins (550 or "
        "later reports the domain), then check the tray joined the rack's domain",
        Action.RECONFIGURE,
        "Fabric: State Completed, Status Success, no CliqueId/ClusterUUID lines",
    )
