"""The GPUs the BMC lists against those the OS sees (`nvidia-smi -q`).

A GPU the BMC lists (``hardware.gpus``, read by `bringup discover`: docs/redfish.md, "GPUs and
PCIe devices") that nvidia-smi does not is the classic GPU fallen off the bus: the board is in
its slot and powered, the host lost it. The finding names the slot the BMC gives, so the
technician goes to the right one.

The check runs the node's shared ``nvidia-smi -q`` and is handed the node's record beside it
(``needs_record``): its input is the BMC's list as JSON, then the nvidia-smi output, each after
a section line. GPUs are matched by serial, else by UUID; a BMC that gives neither for its GPUs
is compared by count only, and then no slot can be named.
"""

from __future__ import annotations

import json

from bringup.profiles.load import Profile
from burnin.checks.base import SECTION_MARK, Check, CommandOutput
from burnin.checks.gpu import SMI_QUERY, _query
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.result import Action, Finding, Result, critical, info, warning

BMC_SECTION = f"{SECTION_MARK}bmc-gpus"
OS_SECTION = f"{SECTION_MARK}nvidia-smi -q"


def _uuid(value: object) -> str | None:
    """A GPU UUID compared without nvidia-smi's ``GPU-`` prefix and case."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().lower()
    return text.removeprefix("gpu-")


def split_input(text: str) -> tuple[dict, str]:
    """(the BMC part as a dict, the nvidia-smi output) of this check's input."""
    if not text.startswith(BMC_SECTION) or OS_SECTION not in text:
        raise ParseError("not this check's input: the BMC's GPU list, then nvidia-smi -q")
    head, _, smi = text.partition(f"\n{OS_SECTION}\n")
    try:
        bmc = json.loads(head.removeprefix(BMC_SECTION).strip())
    except json.JSONDecodeError as exc:
        raise ParseError(f"the BMC's GPU list is not JSON: {exc}") from None
    if not isinstance(bmc, dict):
        raise ParseError("the BMC's GPU list is not a JSON object")
    return bmc, smi


@register
class BmcGpusSeen(Check):
    name = "bmc_gpus_seen"
    stages = ("preflight",)
    timeout_s = 90
    needs_record = True
    description = "every GPU the BMC lists is seen by the OS (nvidia-smi), matched by serial or UUID"

    def command(self, profile: Profile) -> str:
        return SMI_QUERY

    def with_record(self, record: dict, stdout: str) -> str:
        hardware = record.get("hardware") or {}
        bmc = {
            "gpus": hardware.get("gpus"),
            "unavailable": (hardware.get("unavailable") or {}).get("gpus"),
            "discovered_at": hardware.get("discovered_at"),
        }
        return f"{BMC_SECTION}\n{json.dumps(bmc)}\n{OS_SECTION}\n{stdout}"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        bmc, smi = split_input(output.stdout)
        listed = bmc.get("gpus")
        if listed is None:
            why = bmc.get("unavailable") or "run `bringup discover`"
            return Result.unknown(self.name, f"the BMC's GPU list was never read ({why})")
        if not isinstance(listed, list) or not all(isinstance(g, dict) for g in listed):
            raise ParseError("the BMC's GPU list is not a list of objects")
        q = _query(CommandOutput(stdout=smi))
        if not listed:
            # Many BMCs list no GPU at all (a PCIe card the BMC does not manage): nothing to compare.
            note = f"the BMC lists no GPU (the OS sees {len(q.gpus)}): nothing to compare"
            return Result.judged(
                self.name,
                [info(note, f"nvidia-smi: Attached GPUs : {q.attached_gpus}")],
                {"bmc_gpus": 0, "os_gpus": len(q.gpus)},
            )
        seen_serials = {g.serial.strip() for g in q.gpus if g.serial}
        seen_uuids = {u for u in (_uuid(g.uuid) for g in q.gpus) if u}
        findings: list[Finding] = []
        unmatched = 0
        keyless = [g for g in listed if not g.get("serial") and not _uuid(g.get("uuid"))]
        for gpu in listed:
            serial, uuid = gpu.get("serial"), _uuid(gpu.get("uuid"))
            if not serial and not uuid:
                continue
            if (serial and serial in seen_serials) or (uuid and uuid in seen_uuids):
                continue
            unmatched += 1
            ident = f"serial {serial}" if serial else f"UUID {gpu.get('uuid')}"
            findings.append(
                critical(
                    f"the GPU in slot {gpu.get('slot') or '?'} ({ident}) is listed by the BMC but not seen by "
                    "the OS: fallen off the bus?",
                    Action.REBOOT,
                    f"BMC: {gpu.get('model') or 'GPU'} {ident} at {gpu.get('slot')}; nvidia-smi: Attached GPUs : "
                    f"{q.attached_gpus}",
                    str(gpu.get("slot") or ""),
                )
            )
        if keyless and len(listed) > len(q.gpus) + unmatched:
            slots = ", ".join(str(g.get("slot") or "?") for g in keyless)
            findings.append(
                critical(
                    f"the BMC lists {len(listed)} GPUs, the OS sees {len(q.gpus)}; the BMC gives no serial or UUID "
                    f"to tell which is missing (slots {slots})",
                    Action.REBOOT,
                    f"Attached GPUs : {q.attached_gpus}",
                )
            )
        listed_serials = {g.get("serial") for g in listed if g.get("serial")}
        listed_uuids = {_uuid(g.get("uuid")) for g in listed if _uuid(g.get("uuid"))}
        for i, gpu in enumerate(() if keyless else q.gpus):  # without keys nothing can be matched
            if (gpu.serial and gpu.serial in listed_serials) or (_uuid(gpu.uuid) in listed_uuids):
                continue
            findings.append(
                warning(
                    f"GPU {i} ({gpu.bdf or gpu.bus_id}, serial {gpu.serial}) is seen by the OS but not listed "
                    "by the BMC (its inventory is older than the board?)",
                    Action.MONITOR,
                    f"Serial Number : {gpu.serial}",
                    f"GPU {i}",
                )
            )
        findings.append(
            info(
                f"the BMC lists {len(listed)} GPU(s), the OS sees {len(q.gpus)}",
                f"BMC discovery at {bmc.get('discovered_at')}; nvidia-smi: Attached GPUs : {q.attached_gpus}",
            )
        )
        return Result.judged(self.name, findings, {"bmc_gpus": len(listed), "os_gpus": len(q.gpus)})
