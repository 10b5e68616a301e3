"""The IMEX daemon and the multi-node NVLink domain it joined (GB200/GB300 NVL72), from
``nvidia-imex-ctl -N`` (burnin/parsers/imex.py)."""

from __future__ import annotations

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service
from burnin.checks.registry import register
from burnin.parsers.imex import CONNECTED, ImexDomain, parse_imex_domain
from burnin.result import Action, Finding, Result, critical

# What ``nvidia-imex-ctl -N`` calls a node in the domain and a domain with every node connected
# (NVIDIA IMEX guide: https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/cmdservice.html).
READY, UP = "READY", "UP"


@register
class ImexDomainCheck(Check):
    """Multi-node NVLink needs the IMEX daemon on every tray of the rack and every tray in its
    domain: a tray whose daemon is down or unreachable takes away multi-node NVLink memory from
    jobs spanning it while every single-node check passes (NVIDIA IMEX guide, above). Each tray
    reports the whole domain, so a missing peer is named by its address on every tray."""

    name = "imex_domain"
    stages = ("preflight",)
    service = Service.ALWAYS
    reads = ("nvidia-imex-ctl -N",)
    judges = ("gpu.multi_node_nvlink",)
    description = "the IMEX daemon runs and every node of its NVLink domain is READY and connected (NVL72)"
    timeout_s = 30
    judge_any_rc = True  # systemctl is-active exits 3 for inactive, nvidia-imex-ctl non-zero without a daemon

    def applies(self, profile: Profile) -> bool:
        return profile.gpu.multi_node_nvlink

    def command(self, profile: Profile) -> str:
        return 'echo "IMEX daemon: $(systemctl is-active nvidia-imex)"; nvidia-imex-ctl -N'

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        domain = parse_imex_domain(output.stdout)
        findings: list[Finding] = []
        if domain.daemon is not None and domain.daemon != "active":
            findings.append(
                critical(
                    f"the IMEX daemon (nvidia-imex) is {domain.daemon}: no multi-node NVLink on this tray; "
                    "start it (systemctl start nvidia-imex) after checking /etc/nvidia-imex/nodes_config.cfg",
                    Action.RECONFIGURE,
                    f"systemctl is-active nvidia-imex: {domain.daemon}",
                )
            )
        if domain.domain_state is None:
            if findings:
                return Result.judged(self.name, findings, {"daemon": domain.daemon})
            return Result.unknown(
                self.name, "nvidia-imex-ctl -N printed no domain (is the command service on?)"
            )
        findings += _missing_nodes(domain) + _unconnected(domain)
        if domain.domain_state != UP and not findings:
            findings.append(
                critical(
                    f"the IMEX domain is {domain.domain_state}, not UP: multi-node NVLink jobs fail; "
                    "restart nvidia-imex on the rack's trays",
                    Action.RECONFIGURE,
                    f"Domain State: {domain.domain_state}",
                )
            )
        ready = [n.address for n in domain.nodes if n.state == READY]
        metrics = {
            "daemon": domain.daemon,
            "domain_state": domain.domain_state,
            "nodes": len(domain.nodes),
            "ready": len(ready),
            "not_ready": {n.address: n.state for n in domain.nodes if n.state != READY},
        }
        return Result.judged(self.name, findings, metrics)


def _missing_nodes(domain: ImexDomain) -> list[Finding]:
    return [
        critical(
            f"IMEX node #{n.index} ({n.address}) is {n.state}, not READY: that tray is missing from the "
            f"NVLink domain (Domain State {domain.domain_state}); check nvidia-imex and its network on "
            f"{n.address}, then reboot it",
            Action.REBOOT,
            f"Node #{n.index} - {n.address} - {n.state}",
            n.address,
        )
        for n in domain.nodes
        if n.state != READY
    ]


def _unconnected(domain: ImexDomain) -> list[Finding]:
    """Pairs of READY nodes that are not connected (a one-way fault shows in one direction only)."""
    ready = {n.index for n in domain.nodes if n.state == READY}
    cells = sorted(
        (a, b, c) for (a, b), c in domain.links.items() if c != CONNECTED and a in ready and b in ready
    )
    if not cells:
        return []

    def name(i: int) -> str:
        node = domain.node(i)
        return f"#{i} ({node.address})" if node else f"#{i}"

    shown = ", ".join(f"{name(a)} -> {name(b)}: {c}" for a, b, c in cells[:8])
    more = f" and {len(cells) - 8} more" if len(cells) > 8 else ""
    return [
        critical(
            f"IMEX nodes not connected: {shown}{more}; check the trays' management network",
            Action.RECONFIGURE,
            shown,
        )
    ]
