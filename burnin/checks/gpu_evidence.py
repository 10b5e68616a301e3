"""GPU tool outputs judged offline (burnin evaluate), not run by a stage: `nvidia-smi --query-gpu
... --format=csv` and gpu-burn logs.

``--query-gpu`` CSV: every column the profile has an expectation for is judged (docs/burnin.md, "A
PASS covers what the output shows"), the others are listed. The GPUs it lists are the node's
unless the pasted command line shows a ``-i``/``--id`` filter: each capture (a header starts one)
must list the profile's count. The model (``name``), the driver (``driver_version``) and ECC mode
(``ecc.mode.*``, enabled) are held as on ``nvidia-smi -q``. A GPU's link width
below the profile is a failure at any time; its current generation drops at idle (power saving),
so only ``pcie.link.gen.max`` (what the GPU and the slot can reach) is held to the profile, and the
best current generation over the captures is reported. Throttle reasons are judged as the
gpu_stress check judges its sampler. Without a header the columns are unknown, except the
burn-in's own throttle sampler (index, 0x mask, temperature, power).

gpu-burn: its exit status lies and its summary may say OK for a GPU that never ran (the rows of
its samples in tests/fixtures/samples/index.tsv), so a GPU passes only with a summary of OK, iterations done, no error and no death.
"""

from __future__ import annotations

import re
from typing import Any

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.checks.gpu_identity import model_findings
from burnin.checks.gpu_load import THROTTLE_SAMPLER, throttle_findings
from burnin.checks.gpu_smi_failure import smi_failure_result
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.gpu_burn import parse_gpu_burn
from burnin.parsers.nvidia_smi import (
    ThrottleSample,
    parse_query_gpu_csv_sections,
    parse_throttle_samples,
)
from burnin.result import Action, Finding, Result, critical, info

_SAMPLER_ROW = re.compile(r"^\d+, 0x[0-9A-Fa-f]{16}, ")
_MASK_FIELDS = ("clocks_throttle_reasons.active", "clocks_event_reasons.active")


_WIDTHS = {1, 2, 4, 8, 12, 16, 32}  # the lane counts PCIe links train at
_GENS = range(1, 8)


def _int(value: str | None, allowed: set[int] | range, what: str) -> int | None:
    """A link width or generation; None for [N/A]; a ParseError for what no link reports (x999)."""
    if value is None:
        return None
    m = re.fullmatch(r"\s*(\d{1,6})\s*x?\s*", value)
    if m is None or int(m.group(1)) not in allowed:
        raise ParseError(f"{what} {value!r} is not a PCIe link value")
    return int(m.group(1))


_KEYS = ("index", "pci.bus_id", "uuid", "gpu_uuid")  # the columns that name a GPU
_NAMES = ("name", "gpu_name")
_ECC_MODES = ("ecc.mode.current", "ecc.mode.pending")
# A --query-gpu command line asking about some GPUs only (`-i 0`, `--id=0,1`): its rows are not the node's.
_ID_FILTER = re.compile(r"(?:^|\s)(?:-i\s*\S|--id[=\s])")


_QUERY_FIELDS = re.compile(r"--query-gpu=([A-Za-z0-9_.,]+)")


def _sections(text: str) -> list[list[dict[str, str | None]]]:
    """The captures; a noheader CSV is read by the fields of its pasted command line, or as the
    burn-in's own throttle sampler."""
    try:
        return parse_query_gpu_csv_sections(text)
    except ParseError:
        asked = {m.group(1) for m in _QUERY_FIELDS.finditer(text)}
        if len(asked) == 1:
            return parse_query_gpu_csv_sections(text, asked.pop().split(","))
        if not any(_SAMPLER_ROW.match(line) for line in text.splitlines()):
            raise ParseError(
                "a --query-gpu CSV without its header: the columns cannot be told (run it with --format=csv)"
            ) from None
    fields = THROTTLE_SAMPLER.split("--query-gpu=")[1].split()[0].split(",")
    return parse_query_gpu_csv_sections(text, fields)


def _gpu_key(row: dict[str, str | None], position: int) -> str:
    for column in _KEYS:
        if value := row.get(column):
            return value if value.startswith("GPU-") else f"GPU {value}"  # a UUID names itself
    return f"the GPU of row {position + 1}"  # no column names it: its place in its capture


def _listed(section: list[dict[str, str | None]]) -> int:
    """How many GPUs one capture lists: its distinct GPUs, or its rows when no column names one
    (a sampler repeats each GPU's row)."""
    keys = [next((r[c] for c in _KEYS if r.get(c)), None) for r in section]
    return len(set(keys)) if all(keys) else len(section)


def _count_findings(sections: list[list[dict[str, str | None]]], want: int) -> list[Finding]:
    counts = [_listed(section) for section in sections]
    wrong = sorted({n for n in counts if n != want})
    if not wrong:
        return []
    listed = " and ".join(str(n) for n in wrong)
    return [
        critical(
            f"the CSV lists {listed} GPU(s), the profile has {want}"
            + (f" ({len(sections)} captures: {counts})" if len(sections) > 1 else ""),
            Action.RESEAT,
            f"GPUs per capture: {counts}",
        )
    ]


def _first(rows: list[dict[str, str | None]], *columns: str) -> str | None:
    return next((r[c] for r in rows for c in columns if r.get(c)), None)


def _identity_findings(
    readings: dict[str, list[dict[str, str | None]]], profile: Profile
) -> tuple[list[Finding], list[str]]:
    """The model, the driver and ECC mode, as gpu_inventory, gpu_versions and gpu_ecc judge them
    on nvidia-smi -q; the GPUs whose ECC mode column is [N/A]."""
    findings: list[Finding] = []
    unreported: list[str] = []
    model, driver = profile.gpu.model, str(profile.pins.driver)
    drivers = sorted({d for rows in readings.values() if (d := _first(rows, "driver_version"))})
    for found in drivers:
        if found != driver:
            findings.append(
                critical(
                    f"driver {found} installed, the profile pins {driver}",
                    Action.RECONFIGURE,
                    f"driver_version: {found}",
                )
            )
    findings += model_findings([(gpu, _first(rows, *_NAMES)) for gpu, rows in readings.items()], model)
    for gpu, rows in readings.items():
        if any(c in r for r in rows for c in _ECC_MODES) and _first(rows, "ecc.mode.current") is None:
            unreported.append(gpu)
        for column in _ECC_MODES:
            mode = _first(rows, column)
            if mode is not None and mode.lower() != "enabled":
                findings.append(
                    critical(
                        f"{gpu}: {column} is {mode} (enable it: nvidia-smi -e 1, reboot)",
                        Action.RECONFIGURE,
                        f"{column}: {mode}",
                        gpu,
                    )
                )
    return findings, unreported


def _shown(rows: list[dict[str, str | None]]) -> set[str]:
    """The columns with a value in some row ([N/A] everywhere shows nothing)."""
    return {k for r in rows for k, v in r.items() if v is not None}


def _not_covered(shown: set[str], filtered: bool) -> list[str]:
    """The profile fields this check judges that the CSV does not show (docs/burnin.md)."""
    covers = {
        "gpu.count": not filtered,
        "gpu.model": any(c in shown for c in _NAMES),
        "pins.driver": "driver_version" in shown,
        # The current generation drops at idle: only the reachable one is held to the profile.
        "pcie.gpu.gen": "pcie.link.gen.max" in shown,
        "pcie.gpu.width": "pcie.link.width.current" in shown,
    }
    return [field for field, covered in covers.items() if not covered]


def _pcie_findings(readings: dict[str, list[dict[str, str | None]]], profile: Profile) -> list[Finding]:
    want_gen, want_width = profile.pcie.gpu.gen, profile.pcie.gpu.width
    findings: list[Finding] = []
    for gpu, rows in readings.items():
        widths = [
            w for r in rows if (w := _int(r.get("pcie.link.width.current"), _WIDTHS, "width")) is not None
        ]
        gens = [
            g for r in rows if (g := _int(r.get("pcie.link.gen.current"), _GENS, "generation")) is not None
        ]
        max_gens = [
            g for r in rows if (g := _int(r.get("pcie.link.gen.max"), _GENS, "generation")) is not None
        ]
        if not (widths or gens or max_gens):
            raise ParseError(f"{gpu}: no value in its pcie.link columns (all [N/A])")
        evidence = "; ".join(
            ", ".join(f"{k}={v}" for k, v in r.items() if k.startswith("pcie.")) for r in rows[:3]
        )
        if widths and want_width is not None and min(widths) < want_width:
            findings.append(
                critical(
                    f"{gpu} link is x{min(widths)}, expected x{want_width}", Action.RESEAT, evidence, gpu
                )
            )
        if max_gens and want_gen is not None and max(max_gens) < want_gen:
            findings.append(
                critical(
                    f"{gpu} can reach only Gen{max(max_gens)} (pcie.link.gen.max), expected Gen{want_gen}: "
                    "the slot, riser or a BIOS PCIe speed setting",
                    Action.RESEAT,
                    evidence,
                    gpu,
                )
            )
        if (
            gens
            and want_gen is not None
            and max(gens) < want_gen
            and not (max_gens and max(max_gens) < want_gen)
        ):
            findings.append(
                info(
                    f"{gpu} link at Gen{max(gens)} in these captures: GPUs slow their link at idle",
                    evidence,
                    gpu,
                )
            )
    return findings


def _throttle_samples(rows: list[dict[str, str | None]]) -> list[ThrottleSample]:
    lines = []
    for position, row in enumerate(rows):
        mask = next((row[f] for f in _MASK_FIELDS if row.get(f)), None)
        if mask is None:
            continue
        index = row.get("index") or str(position)
        lines.append(f"{index}, {mask}, {row.get('temperature.gpu') or ''}, {row.get('power.draw') or ''}")
    return parse_throttle_samples("\n".join(lines)) if lines else []


@register
class GpuQueryCsv(Check):
    name = "gpu_query_csv"
    stages = ()  # no stage: judged offline only (burnin evaluate)
    reads = ("nvidia-smi --query-gpu CSV",)
    judges = ("gpu.count", "gpu.model", "pins.driver", "pcie.gpu.gen", "pcie.gpu.width")
    description = (
        "nvidia-smi --query-gpu CSV: GPU count, model, driver, ECC mode, PCIe link width and reachable "
        "generation, throttle reasons: every column it has"
    )

    def command(self, profile: Profile) -> str:
        return (
            "nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,"
            "pcie.link.width.current,pcie.link.width.max,clocks_throttle_reasons.active --format=csv"
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        if failed := smi_failure_result(self.name, output):
            return failed  # nvidia-smi answered only an error (burnin/checks/gpu_smi_failure.py)
        sections = _sections(output.stdout)
        rows = [row for section in sections for row in section]
        if not rows:
            raise ParseError("a --query-gpu CSV header with no data row under it")
        columns = sorted({k for r in rows for k in r})
        readings: dict[str, list[dict[str, str | None]]] = {}
        for section in sections:
            for position, row in enumerate(section):
                readings.setdefault(_gpu_key(row, position), []).append(row)
        judged_pcie = any(c.startswith("pcie.link.") for c in columns)
        samples = _throttle_samples(rows)
        known = {*_KEYS, *_NAMES, *_ECC_MODES, "driver_version"}
        if not judged_pcie and not samples and not known.intersection(columns):
            raise ParseError(
                "no column this check judges (index, name, driver_version, ecc.mode.*, pcie.link.*, "
                f"clocks_throttle_reasons.active) in: {', '.join(columns)}"
            )
        filtered = any(
            _ID_FILTER.search(line) for line in output.stdout.splitlines() if "--query-gpu" in line
        )
        findings = [] if filtered else _count_findings(sections, profile.gpu.count)
        identity, unreported = _identity_findings(readings, profile)
        findings += identity
        findings += _pcie_findings(readings, profile) if judged_pcie else []
        findings += throttle_findings(samples)
        metrics: dict[str, Any] = {"gpus": len(readings), "rows": len(rows), "columns": columns}
        incomplete = f"ECC mode not reported for {', '.join(unreported)}" if unreported else ""
        return Result.judged(
            self.name,
            findings,
            metrics,
            incomplete=incomplete,
            not_covered=_not_covered(_shown(rows), filtered),
        )


@register
class GpuBurnLog(Check):
    name = "gpu_burn"
    stages = ()  # no stage: judged offline only (burnin evaluate); the gpu stage runs burnin-stress
    reads = ("gpu-burn",)
    judges = ("gpu.count",)
    description = "gpu-burn log: every GPU ran, made progress, had no error, and the summary says OK"
    judge_any_rc = True  # gpu-burn exits 0 with FAULTY GPUs: the log decides

    def command(self, profile: Profile) -> str:
        return "gpu_burn -d 600"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        run = parse_gpu_burn(output.stdout)
        findings: list[Finding] = []
        for err in dict.fromkeys(run.init_errors):
            findings.append(critical(f"a GPU test could not start: {err}", Action.RESET_GPU, err))
        if run.no_clients_alive:
            findings.append(critical("every gpu-burn worker died ('No clients are alive')", Action.REBOOT))
        for g in run.gpus:
            subject = f"GPU {g.index}"
            if g.status == "FAULTY" or (g.errors or 0) > 0 or g.warning:
                findings.append(
                    critical(
                        f"{subject}: "
                        + (
                            f"{g.errors} computation error(s)"
                            if (g.errors or 0) >= 0
                            else "an unreadable error count"
                        )
                        + f" (gpu-burn: {g.status or 'no summary'})",
                        Action.RMA,
                        f"GPU {g.index}: {g.status}, errors: {g.errors}",
                        subject,
                    )
                )
            elif g.died or (g.iterations is not None and g.iterations < 0):
                findings.append(
                    critical(f"{subject}: its gpu-burn worker died", Action.RESET_GPU, "", subject)
                )
            elif run.summary_complete and (not g.iterations or not g.max_gflops):
                findings.append(
                    critical(
                        f"{subject}: no work done ({g.iterations} iterations, {g.max_gflops} Gflop/s) "
                        f"although the summary says {g.status}",
                        Action.RESET_GPU,
                        f"proc'd: {g.iterations} ({g.gflops} Gflop/s)",
                        subject,
                    )
                )
        tested = run.tested if run.tested is not None else len(run.gpus)
        if tested < profile.gpu.count and run.summary_complete:
            findings.append(
                critical(
                    f"gpu-burn tested {tested} GPU(s), the profile has {profile.gpu.count}", Action.RESEAT
                )
            )
        incomplete = "" if run.summary_complete else "no 'Tested N GPUs' summary: the run did not finish"
        metrics = {
            "gpus": len(run.gpus),
            "gflops": {f"GPU {g.index}": g.max_gflops for g in run.gpus},
            "max_temp_c": max(
                (g.max_temperature_c for g in run.gpus if g.max_temperature_c is not None), default=None
            ),
        }
        return Result.judged(self.name, findings, metrics, incomplete=incomplete)
