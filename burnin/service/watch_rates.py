"""`burnin watch`, the counters half (pure): two readings of the node's error counters and the
seconds between them -> findings, judged as rates against the profile's ``watch`` section.

A reading maps a counter's key to its value: ``ib:<device>/<port>:<counter>`` for the files
under /sys/class/infiniband/*/ports/*/counters, ``aer:<bdf>:<kind>`` for the TOTAL_* line of
/sys/bus/pci/devices/*/aer_dev_{correctable,nonfatal,fatal}, ``nvlink:<gpu>/<link>:<counter>``
for the replay, recovery and CRC counters of `nvidia-smi nvlink -e` (the counter's name as
printed, lower case, '_' for spaces: ``replay_errors``). What reads them is burnin.service.watch
(docs/in-service.md, "The resident watcher").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from burnin.parsers.nvlink_errors import CRC, RECOVERY, REPLAY, NvlinkErrors, counter_kind
from burnin.result import Action, Finding, Result, Severity, Verdict, critical, warning

CHECK = "error_rates"  # the check name a drain for a counter rate carries (its Slurm reason, the breaker)

# The IB port counters read, by their sysfs names (Documentation/ABI/stable/sysfs-class-infiniband).
IB_SYMBOL = "symbol_error"
IB_RECOVERY = "link_error_recovery"
IB_DOWNED = "link_downed"
IB_COUNTERS = (IB_SYMBOL, IB_RECOVERY, IB_DOWNED)
# 8- and 16-bit IB counters stop at their maximum (docs/reference.md, InfiniBand): no rise shows.
IB_MAX = {IB_SYMBOL: 65535, IB_RECOVERY: 255, IB_DOWNED: 255}
AER_KINDS = ("correctable", "nonfatal", "fatal")


@dataclass(frozen=True)
class RateLimits:
    """The profile's ``watch`` thresholds (bringup/profiles/model.py, Watch); correctable AER
    (a warning, never a drain) only when a caller sets it."""

    ib_symbol_errors_per_hour: float = 120
    ib_link_recoveries_per_hour: float = 300
    ib_link_downs: int = 0
    aer_uncorrectable: int = 0
    aer_correctable_per_hour: float | None = None
    nvlink_replay_errors: int = 0
    nvlink_recovery_errors: int = 0
    nvlink_crc_errors_per_second: float = 100

    @classmethod
    def of(cls, watch: object) -> RateLimits:
        fields = cls.__dataclass_fields__
        return cls(**{n: getattr(watch, n) for n in fields if hasattr(watch, n)})


def nvlink_reading(errors: NvlinkErrors) -> dict[str, int]:
    """The replay, recovery and CRC counters of one `nvidia-smi nvlink -e` output, by key."""
    return {
        f"nvlink:{g.gpu}/{link}:{name.lower().replace(' ', '_')}": value
        for g in errors.gpus
        for (link, name), value in g.counters.items()
        if counter_kind(name) is not None
    }


def rises(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """How much each counter read both times rose. A counter that went down was reset (a driver
    reload, `perfquery -x -R`): it has no rise this time, never a negative one."""
    return {k: after[k] - v for k, v in before.items() if k in after and after[k] > v}


def judge_rates(
    before: Mapping[str, int], after: Mapping[str, int], elapsed_s: float, limits: RateLimits
) -> list[Finding]:
    """The findings of the counters' rises between two readings ``elapsed_s`` apart: critical
    (the node drains) over a drain threshold, a warning for correctable AER over its ceiling."""
    if elapsed_s <= 0:
        return []
    per_hour = 3600.0 / elapsed_s
    out: list[Finding] = []
    for key, rise in sorted(rises(before, after).items()):
        source, where, name = _parts(key)
        rate = rise * per_hour
        if source == "ib" and name == IB_SYMBOL and rate > limits.ib_symbol_errors_per_hour:
            out.append(
                critical(
                    f"IB {where}: {rise} symbol errors in {elapsed_s:g} s ({rate:.0f}/h, over "
                    f"{limits.ib_symbol_errors_per_hour:g}/h)",
                    Action.REPLACE_CABLE,
                    key,
                    where,
                )
            )
        elif source == "ib" and name == IB_RECOVERY and rate > limits.ib_link_recoveries_per_hour:
            out.append(
                critical(
                    f"IB {where}: {rise} link error recoveries in {elapsed_s:g} s ({rate:.0f}/h, over "
                    f"{limits.ib_link_recoveries_per_hour:g}/h)",
                    Action.REPLACE_CABLE,
                    key,
                    where,
                )
            )
        elif source == "ib" and name == IB_DOWNED and rise > limits.ib_link_downs:
            out.append(
                critical(
                    f"IB {where}: link went down {rise} time(s) in {elapsed_s:g} s",
                    Action.REPLACE_CABLE,
                    key,
                    where,
                )
            )
        elif source == "aer" and name in ("nonfatal", "fatal") and rise > limits.aer_uncorrectable:
            out.append(
                critical(
                    f"{rise} uncorrectable ({name}) PCIe AER error(s) at {where} in {elapsed_s:g} s",
                    Action.RESEAT,
                    key,
                    where,
                )
            )
        elif (
            source == "aer"
            and name == "correctable"
            and limits.aer_correctable_per_hour is not None
            and rate > limits.aer_correctable_per_hour
        ):
            out.append(
                warning(
                    f"{rise} correctable PCIe AER errors at {where} in {elapsed_s:g} s ({rate:.0f}/h, over "
                    f"{limits.aer_correctable_per_hour:g}/h)",
                    Action.MONITOR,
                    key,
                    where,
                )
            )
        elif source == "nvlink":
            out.extend(_nvlink_finding(where, name, rise, elapsed_s, limits))
    return out


def _nvlink_finding(where: str, name: str, rise: int, elapsed_s: float, limits: RateLimits) -> list[Finding]:
    """DCGM's health watch (https://github.com/NVIDIA/DCGM, modules/health/DcgmHealthWatch.cpp,
    MonitorNVLink): replay and recovery errors fail; CRC errors fail at 100 a second or more
    ("RM has informed us that CRC errors only matter at rates of 100+ per second",
    DcgmGpuHardwareLimits.h) and are a warning below. The action: the GPU's NVLink is the GPU's or
    its baseboard's, and a reset retrains it (docs/in-service.md)."""
    gpu, _, link = where.partition("/")
    at = f"NVLink GPU {gpu} link {link}"
    counter = name.replace("_", " ")
    kind = counter_kind(counter)
    counter = counter.replace("crc", "CRC")  # as nvidia-smi prints it
    key = f"nvlink:{where}:{name}"
    if kind == REPLAY and rise > limits.nvlink_replay_errors:
        return [critical(f"{at}: {rise} {counter} in {elapsed_s:g} s", Action.RESET_GPU, key, at)]
    if kind == RECOVERY and rise > limits.nvlink_recovery_errors:
        return [critical(f"{at}: {rise} {counter} in {elapsed_s:g} s", Action.RESET_GPU, key, at)]
    if kind == CRC:
        per_s = rise / elapsed_s
        text = f"{at}: {rise} {counter} in {elapsed_s:g} s ({per_s:.3g}/s"
        if per_s >= limits.nvlink_crc_errors_per_second:
            return [
                critical(
                    f"{text}, at or over {limits.nvlink_crc_errors_per_second:g}/s)",
                    Action.RESET_GPU,
                    key,
                    at,
                )
            ]
        return [warning(f"{text}, under {limits.nvlink_crc_errors_per_second:g}/s)", Action.MONITOR, key, at)]
    return []


def _parts(key: str) -> tuple[str, str, str]:
    """(source, where, counter) of a key; a PCI address has colons of its own."""
    source, _, rest = key.partition(":")
    where, _, name = rest.rpartition(":")
    return source, where, name


def saturated(reading: Mapping[str, int]) -> list[str]:
    """The IB counters at their maximum, which can show no rise (a counter reset is needed)."""
    return sorted(
        k
        for k, v in reading.items()
        if k.startswith("ib:") and v >= IB_MAX.get(k.rsplit(":", 1)[-1], 1 << 64)
    )


def rates_result(findings: list[Finding], counters: int, elapsed_s: float) -> Result:
    """The findings of one interval as a result of the ``error_rates`` check."""
    metrics = {"counters": counters, "elapsed_s": round(elapsed_s, 3)}
    if any(f.severity is Severity.CRITICAL for f in findings):
        return Result(CHECK, Verdict.FAIL, metrics, tuple(findings), "an error counter rose too fast")
    if findings:
        return Result(CHECK, Verdict.WARN, metrics, tuple(findings), "")
    return Result(CHECK, Verdict.PASS, metrics, (), "")
