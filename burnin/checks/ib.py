"""InfiniBand port state (preflight): count, Active, LinkUp, rate and HCA firmware vs the profile.

Ethernet ports of the same HCAs (a CX-6 Dx or BlueField next to the IB rails) show as Down or
Disabled in ibstat: they are filtered by link layer, never counted as IB failures. HCAs of the link
layer whose CA type is not the profile's ``ib.ca_types`` (a storage ConnectX beside the rails) are
listed, not judged (burnin/checks/ib_fabric.py).
"""

from __future__ import annotations

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service
from burnin.checks.ib_fabric import fabric_name, not_compute_findings, on_compute_fabric
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.ibstat import parse_ibstat
from burnin.result import Action, Finding, Result, critical, info


@register
class IbPorts(Check):
    name = "ib_ports"
    stages = ("preflight",)
    service = Service.ALWAYS
    reads = ("ibstat",)
    judges = ("ib.hca_count", "ib.rate_gbps", "ib.link_layer", "ib.ca_types", "pins.hca_firmware")
    description = "IB ports: count, Active/LinkUp, rate, HCA firmware pin (ibstat)"
    timeout_s = 30
    judge_any_rc = True  # ibstat exits 255 after printing good data when one device vanished

    def applies(self, profile: Profile) -> bool:
        return profile.ib.hca_count > 0

    def command(self, profile: Profile) -> str:
        return "ibstat"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        report = parse_ibstat(output.stdout)
        if not report.hcas:
            raise ParseError("ibstat listed no HCA")
        want_count, want_rate, layer = profile.ib.hca_count, profile.ib.rate_gbps, profile.ib.link_layer
        ca_types = profile.ib.ca_types
        fw_pin = profile.pins.hca_firmware
        findings: list[Finding] = []
        every = [(hca, port) for hca in report.hcas for port in hca.ports]
        ports = [(h, p) for h, p in every if on_compute_fabric(p.link_layer, h.ca_type, layer, ca_types)]
        # The other link layer (Ethernet ports of the same HCAs), and the HCAs of the link layer
        # that are not the rails (a storage ConnectX: burnin/checks/ib_fabric.py).
        others = [(h, p) for h, p in every if not on_compute_fabric(p.link_layer, None, layer, ())]
        storage = [(h, p) for h, p in every if (h, p) not in ports and (h, p) not in others]
        if len(ports) != want_count:
            findings.append(
                critical(
                    f"{len(ports)} {fabric_name(layer, ca_types)} port(s) found, the profile has {want_count}",
                    Action.RESEAT,
                    ", ".join(f"{h.name}/{p.number} {p.link_layer}" for h, p in ports + others) or "no port",
                    "HCAs",
                )
            )
        for hca, port in ports:
            down = port.state != "Active" or port.physical_state != "LinkUp"
            slow = not down and port.rate is not None and float(port.rate) < want_rate
            if not (down or slow):
                continue  # a healthy port: no finding, so no evidence to write
            subject = f"{hca.name} port {port.number}"
            # The HCA's node GUID names the card for an RMA (ibstat prints no serial number).
            named = f"{subject} (node GUID {hca.node_guid})" if hca.node_guid else subject
            evidence = (
                f"CA '{hca.name}' Node GUID: {hca.node_guid} Port {port.number}: State: {port.state}, "
                f"Physical state: {port.physical_state}, Rate: {port.rate}, GUID {port.port_guid}"
            )
            if down:
                action = link_down_action(port.physical_state)
                findings.append(
                    critical(
                        f"{named} is {port.state}/{port.physical_state} (want Active/LinkUp)",
                        action,
                        evidence,
                        subject,
                    )
                )
            elif slow:
                findings.append(
                    critical(
                        f"{named} runs at {port.rate} Gb/s, the profile wants {want_rate:g}",
                        Action.REPLACE_CABLE,
                        evidence,
                        subject,
                    )
                )
        for hca in {h.name: h for h, _ in ports}.values():
            if fw_pin and hca.firmware != fw_pin:
                findings.append(
                    critical(
                        f"{hca.name} firmware {hca.firmware}, the profile pins {fw_pin}",
                        Action.RECONFIGURE,
                        f"CA '{hca.name}' Firmware version: {hca.firmware}",
                        hca.name,
                    )
                )
        if others:
            findings.append(
                info(
                    f"{len(others)} non-{layer} port(s) ignored",
                    ", ".join(f"{h.name}/{p.number} {p.link_layer}" for h, p in others),
                )
            )
        findings += not_compute_findings((f"{h.name}/{p.number}", h.ca_type) for h, p in storage)
        metrics = {
            "ports": len(ports),
            "active": sum(p.state == "Active" for _, p in ports),
            "firmware": sorted({h.firmware or "?" for h, _ in ports}),
            "node_guids": {h.name: h.node_guid for h, _ in ports if h.node_guid},
            # Per HCA, for the order comparison (burnin/accept/conformance.py).
            "hca_list": [
                {"name": h.name, "ca_type": h.ca_type, "firmware": h.firmware, "node_guid": h.node_guid}
                for h in {h.name: h for h, _ in ports}.values()
            ],
        }
        incomplete = "; ".join(report.problems) if report.problems else ""
        return Result.judged(self.name, findings, metrics, incomplete=incomplete)


def link_down_action(physical_state: str | None) -> Action:
    """What to do about an IB port whose link is not up: no link partner seen at all (Polling,
    Disabled, or no state) is the cable or the far end; a link that trained wrong, a reseat."""
    return Action.REPLACE_CABLE if physical_state in ("Polling", "Disabled", None) else Action.RESEAT
