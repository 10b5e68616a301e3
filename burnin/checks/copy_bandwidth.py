"""gpu stage: host-to-device and device-to-host copy bandwidth of every GPU.

A PCIe link can read Gen5 x16 in sysfs and still move half what it should (a marginal riser,
retimer or cable that replays, a GPU behind the wrong root port); a copy measured end to end
shows it. nvbandwidth runs when the node has it (NVIDIA's tool, the one the floor was set
with), otherwise ``burnin-stress --copy-bandwidth`` (a pinned-memory copy through torch or
CuPy). Each GPU and direction is judged against the profile's floor for its link
(``floors.h2d_gbps``, 48 GB/s on Gen5 x16) and against the node's best GPU
(``floors.copy_fraction_of_best``): a GPU well below its siblings is named.
"""

from __future__ import annotations

from typing import Any

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput
from burnin.checks.load import stress_shell
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.nvbandwidth import D2H, H2D, CopyBandwidth, CopyGpu, parse_copy_bandwidth
from burnin.result import Action, Finding, Result, critical

NVBANDWIDTH = "nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce"
COPY_SECONDS = 2  # burnin-stress: at most this long per GPU and direction
DIRECTIONS = {H2D: "host-to-device", D2H: "device-to-host"}
# PCIe raw rate per lane (GT/s) and line-code efficiency by generation (PCI-SIG base specs):
# 8b/10b up to Gen2, 128b/130b for Gen3-5, FLIT mode (242/256) from Gen6.
_GT_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
_EFFICIENCY = {1: 0.8, 2: 0.8, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}


def link_gbytes(gen: int, width: int) -> float | None:
    """A PCIe link's raw data rate in one direction, GB/s (Gen5 x16: 63.0); None for an unknown gen."""
    if gen not in _GT_S:
        return None
    return round(_GT_S[gen] * width * _EFFICIENCY[gen] / 8, 1)


@register
class CopyBandwidthCheck(Check):
    name = "copy_bandwidth"
    stages = ("gpu",)
    reads = ("nvbandwidth / bandwidthTest",)
    judges = ("pcie.gpu.gen", "pcie.gpu.width", "floors.h2d_gbps", "floors.copy_fraction_of_best")
    description = "host-to-device and device-to-host copy bandwidth of every GPU (nvbandwidth)"
    timeout_s = 600
    judge_any_rc = True  # nvbandwidth exits 1 after a CUDA error, burnin-stress 2: the output says

    def command(self, profile: Profile) -> str:
        return (
            "if command -v nvbandwidth >/dev/null 2>&1; then\n"
            f"  {NVBANDWIDTH}\n"
            "else\n"
            f"{stress_shell(COPY_SECONDS, '--copy-bandwidth')}\n"
            "fi"
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        data = parse_copy_bandwidth(output.stdout)
        return judge_copy(data, profile, self.name)


def judge_copy(data: CopyBandwidth, profile: Profile, check: str = "copy_bandwidth") -> Result:
    """Judge parsed copy figures (pure); shared by the check and anything that re-judges them."""
    link = profile.pcie.gpu
    # A profile may leave the link unset (docs/platforms.md): then only the floors apply.
    raw = link_gbytes(link.gen, link.width) if link.gen and link.width else None
    floor = profile.floors.h2d_gbps
    fraction = profile.floors.copy_fraction_of_best
    figures = {
        direction: {g.index: v for g in data.gpus if (v := _figure(g, direction)) is not None}
        for direction in DIRECTIONS
    }
    metrics: dict[str, Any] = {
        "tool": data.tool,
        "version": data.version,
        "method": data.method,
        "floor_gbps": floor,
        "link": f"Gen{link.gen} x{link.width}" if link.gen and link.width else None,
        "link_raw_gbps": raw,
        "fraction_of_best": fraction,
        **{f"{d}_gbps": {f"GPU {i}": v for i, v in sorted(values.items())} for d, values in figures.items()},
    }
    if not any(figures.values()) and not any(g.error for g in data.gpus):
        why = "; ".join(data.errors) or "; ".join(data.problems)
        if data.cumulative:
            sums = ", ".join(f"{DIRECTIONS[d]} {v:g} GB/s over {n}" for d, (n, v) in data.cumulative.items())
            why = f"bandwidthTest --device=all sums the GPUs ({sums}): run it once per --device=N"
        if data.errors or data.cumulative:
            return Result.unknown(check, f"no per-GPU copy figure: {why}", metrics)
        raise ParseError(
            f"no host<->device copy figure in the {data.tool} output" + (f" ({why})" if why else "")
        )

    findings: list[Finding] = [_error_finding(g) for g in data.gpus if g.error]
    for direction, values in figures.items():
        if not values:
            continue
        best = max(values.values())
        metrics[f"best_{direction}_gbps"] = best
        for index, value in sorted(values.items()):
            findings += _judge_one(data.gpu(index), direction, value, best, floor, fraction, raw, link)

    incomplete = _incomplete(data, figures, profile.gpu.count)
    return Result.judged(check, findings, metrics, incomplete=incomplete)


def _figure(gpu: CopyGpu, direction: str) -> float | None:
    return gpu.h2d_gbps if direction == H2D else gpu.d2h_gbps


def _where(gpu: CopyGpu | None, index: int) -> str:
    return f"GPU {index}" + (f" ({gpu.bus_id})" if gpu and gpu.bus_id else "")


def _judge_one(
    gpu: CopyGpu | None,
    direction: str,
    value: float,
    best: float,
    floor: float | None,
    fraction: float,
    raw: float | None,
    link: Any,
) -> list[Finding]:
    index = gpu.index if gpu else -1
    subject, where, what = f"GPU {index}", _where(gpu, index), DIRECTIONS[direction]
    evidence = f"{where} {what}: {value:g} GB/s (node best {best:g})"
    on_link = f" (Gen{link.gen} x{link.width} moves at most {raw:g} GB/s)" if raw else ""
    if floor is not None and value < floor:
        return [
            critical(
                f"{where}: {what} copy {value:g} GB/s, below the profile's floor of {floor:g} GB/s"
                f"{on_link}: reseat the GPU's PCIe path (riser, cable, retimer)",
                Action.RESEAT,
                evidence,
                subject,
            )
        ]
    if value < fraction * best:
        return [
            critical(
                f"{where}: {what} copy {value:g} GB/s, more than {100 - fraction * 100:g}% below the "
                f"node's best GPU ({best:g} GB/s): reseat the GPU's PCIe path",
                Action.RESEAT,
                evidence,
                subject,
            )
        ]
    return []


def _error_finding(gpu: CopyGpu) -> Finding:
    subject = f"GPU {gpu.index}"
    return critical(
        f"{_where(gpu, gpu.index)}: the copy test failed: {gpu.error}", Action.RESET_GPU, gpu.error, subject
    )


def _incomplete(data: CopyBandwidth, figures: dict[str, dict[int, float]], count: int) -> str:
    """Why part of the node was not judged ('' when every GPU has both directions)."""
    reasons = [*data.problems, *data.errors]
    if not data.complete and not data.problems:
        reasons.append(f"the {data.tool} output ends before its closing lines: it was cut short")
    for direction, values in figures.items():
        missing = [i for i in range(count) if i not in values and not (data.gpu(i) and data.gpu(i).error)]
        if missing and len(values) < count:
            shown = ", ".join(str(i) for i in missing[:8])
            reasons.append(f"no {DIRECTIONS[direction]} figure for GPU(s) {shown} (the profile has {count})")
    return "; ".join(reasons)
