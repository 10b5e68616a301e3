"""The default `nvidia-smi` table judged offline (burnin evaluate), not run by a stage: what it shows
of the profile's expectations is judged, what it cannot show is listed (docs/burnin.md, "A PASS
covers what the output shows").

- The GPUs it lists against ``gpu.count``: nvidia-smi prints every GPU, then its Processes box, so
  the count is the node's only when that box is there, and not at all when the pasted command
  line shows ``-i``/``--id``. A table ending at a GPU's closing border, without the box, may have
  been cut before the next GPU: what it shows is judged, and it cannot pass.
- Each GPU's name against ``gpu.model``; the table shortens long names with '...', so such a name
  is held to the start of the model.
- ``Driver Version`` against ``pins.driver``, as gpu_versions does on ``nvidia-smi -q``.
- ``Volatile Uncorr. ECC`` above 0 (a reset clears it, as gpu_ecc judges it), ``MIG M.`` Enabled
  (a warning, as gpu_inventory), and ``ERR!``, which nvidia-smi prints for a reading it could not
  take: a fan it cannot read has failed or lost its sensor; any other reading, a GPU that no
  longer answers its driver's queries.
- The table is cut (UNKNOWN) unless it ends with a closing border (burnin.parsers.nvidia_smi.SmiTable).
"""

from __future__ import annotations

import re

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.checks.gpu_identity import mig_finding, model_findings
from burnin.checks.gpu_smi_failure import smi_failure_result
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.nvidia_smi import SmiTable, TableGpu, parse_table
from burnin.result import Action, Finding, Result, critical

# A pasted `nvidia-smi -i 0` (or --id=0,1): the table lists those GPUs only, not the node's.
_ID_FILTER = re.compile(r"\bnvidia-smi\b.*\s(?:-i\s*\S|--id[=\s])")
_SHORTENED = "..."


def _name_is(name: str, model: str) -> bool:
    """Whether the table's name (shortened with '...' when too long for its column) is the model's."""
    if name.endswith(_SHORTENED):
        return model.startswith(name[: -len(_SHORTENED)].rstrip())
    return name == model


def _count(table: SmiTable, want: int, filtered: bool) -> tuple[list[Finding], list[str]]:
    """(findings, fields not covered) of the GPUs the table lists."""
    seen = len(table.gpus)
    if filtered:
        return [], ["gpu.count"]
    if seen > want or (seen != want and table.lists_processes):
        wrong = f"the table lists {seen} GPU(s), the profile has {want}"
        return [critical(wrong, Action.RESEAT, f"GPUs listed: {seen}")], []
    return [], [] if table.lists_processes else ["gpu.count"]


def _gpu_findings(gpu: TableGpu) -> list[Finding]:
    where, subject = f"GPU {gpu.index} ({gpu.bus_id})", f"GPU {gpu.index}"
    found = []
    if gpu.volatile_uncorrected_ecc:
        found.append(
            critical(
                f"{where}: {gpu.volatile_uncorrected_ecc} volatile uncorrected ECC error(s)",
                Action.RESET_GPU,
                f"Volatile Uncorr. ECC : {gpu.volatile_uncorrected_ecc}",
                subject,
            )
        )
    if "Fan" in gpu.unreadable:
        found.append(
            critical(
                f"{where}: nvidia-smi cannot read its fan (ERR!): the fan or its sensor failed",
                Action.RMA,
                "Fan : ERR!",
                subject,
            )
        )
    if others := [c for c in gpu.unreadable if c != "Fan"]:
        found.append(
            critical(
                f"{where}: nvidia-smi cannot read its {', '.join(others)} (ERR!): the GPU does not "
                "answer its driver: reset it, RMA if it stays",
                Action.RESET_GPU,
                "; ".join(f"{c} : ERR!" for c in others),
                subject,
            )
        )
    if gpu.mig_mode == "Enabled":
        found.append(mig_finding(where, subject, "MIG M. : Enabled"))
    return found


@register
class GpuTable(Check):
    name = "gpu_table"
    stages = ()  # no stage: judged offline only (burnin evaluate); preflight reads nvidia-smi -q
    reads = ("nvidia-smi (default table)",)
    judges = ("gpu.count", "gpu.model", "pins.driver")
    description = (
        "the default nvidia-smi table: GPU count, model, driver, volatile uncorrected ECC, MIG mode, "
        "readings nvidia-smi could not take (ERR!)"
    )

    def command(self, profile: Profile) -> str:
        return "nvidia-smi"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed  # nvidia-smi answered only an error (burnin/checks/gpu_smi_failure.py)
        table = parse_table(output.stdout)
        if not table.gpus:
            raise ParseError("the nvidia-smi table lists no GPU row")
        if not table.whole:
            raise ParseError("the table does not end with its closing border: it was cut")
        filtered = any(
            _ID_FILTER.search(ln) for ln in output.stdout.splitlines() if not ln.startswith(("|", "+"))
        )
        findings, not_covered = _count(table, profile.gpu.count, filtered)
        # nvidia-smi prints its Processes box after every GPU: a table without it may have been
        # cut between two GPUs, or after the last; what it shows is judged, and it cannot pass.
        incomplete = (
            ""
            if table.lists_processes
            else "the table ends before its Processes box: it may have been cut after the GPUs it shows"
        )
        want = profile.gpu.model
        findings += model_findings(
            [(f"GPU {g.index}", g.name) for g in table.gpus if not _name_is(g.name, want)], want
        )
        pin = profile.pins.driver
        if pin and table.driver_version != str(pin):
            findings.append(
                critical(
                    f"driver {table.driver_version} installed, the profile pins {pin}",
                    Action.RECONFIGURE,
                    f"Driver Version: {table.driver_version}",
                )
            )
        for gpu in table.gpus:
            findings += _gpu_findings(gpu)
        metrics = {
            "gpus": len(table.gpus),
            "models": sorted({g.name for g in table.gpus}),
            "driver": table.driver_version,
        }
        return Result.judged(self.name, findings, metrics, incomplete=incomplete, not_covered=not_covered)
