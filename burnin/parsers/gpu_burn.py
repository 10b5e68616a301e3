"""gpu-burn (wilicc/gpu-burn) output.

Exit status lies (0 with FAULTY GPUs), and the summary can say OK for GPUs that never ran
(init errors, 0 iterations): this parser reports everything it saw, the check decides.
Progress lines are '\\r'-separated in the raw stream; the last one per GPU wins, and the
maximum Gflop/s and temperature over all of them are kept too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from burnin.parsers._common import MAX_GPU_TFLOPS, number, parser, split_lines
from burnin.parsers.errors import ParseError


@dataclass(frozen=True)
class GpuBurnGpu:
    index: int  # position in the progress line = gpu-burn's device number
    name: str | None  # from the 'GPU n: <name> (UUID: ...)' banner
    uuid: str | None
    iterations: int | None  # last 'proc'd' count; -1 means the worker died
    gflops: float | None  # last reported Gflop/s
    max_gflops: float | None
    errors: int | None  # last reported error count (may be negative garbage when a worker died)
    warning: bool  # '(WARNING!)' after the error count in any progress line: compare errors seen
    died: bool  # '(DIED!)' after the error count
    temperature_c: int | None  # last reported
    max_temperature_c: int | None
    status: str | None  # 'OK' / 'FAULTY' from the final summary; None when not printed


@dataclass(frozen=True)
class GpuBurn:
    gpus: tuple[GpuBurnGpu, ...]
    tested: int | None  # 'Tested N GPUs:'; None when the summary never came
    init_errors: tuple[str, ...]  # "Couldn't init a GPU test: Error: CUDA_ERROR_UNKNOWN", ...
    no_clients_alive: bool  # 'No clients are alive!  Aborting'
    progress_samples: int  # number of progress lines seen
    last_percent: float | None  # e.g. 100.0

    @property
    def any_died(self) -> bool:
        return self.no_clients_alive or any(g.died for g in self.gpus)

    @property
    def summary_complete(self) -> bool:
        """The 'Tested N GPUs' summary is there with a status for all N GPUs."""
        return self.tested is not None and sum(g.status is not None for g in self.gpus) >= self.tested


_BANNER_RE = re.compile(r"^GPU (\d+): (.*) \(UUID: ([^()]*)\)$")
_PROGRESS_RE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)%\s+proc'd:\s*(.*)$")
_PROC_RE = re.compile(r"(?<![\d-])(-?\d+) \((\d+(?:\.\d+)?) Gflop/s\)")
_ERRORS_RE = re.compile(r"(-?\d+)\s*(\((?:WARNING|DIED)!\))?")
_STATUS_RE = re.compile(r"^\s*GPU (\d+):\s*(OK|FAULTY)\s*$")


@parser
def parse_gpu_burn(text: str) -> GpuBurn:
    """The whole gpu-burn log: banners, '\\r' progress lines, init errors, final summary."""
    names: dict[int, tuple[str, str]] = {}
    last: dict[int, dict] = {}
    statuses: dict[int, str] = {}
    init_errors: list[str] = []
    tested = None
    samples = 0
    last_percent = None
    no_clients = False
    for line in split_lines(text):
        if m := _BANNER_RE.match(line.strip()):
            names[int(m.group(1))] = (m.group(2), m.group(3))
            continue
        if m := _STATUS_RE.match(line):
            statuses[int(m.group(1))] = m.group(2)
            continue
        if m := re.match(r"^\s*Tested (\d+) GPUs?:", line):
            tested = int(m.group(1))
            continue
        if "No clients are alive" in line:
            no_clients = True
            continue
        if m := _PROGRESS_RE.search(line):
            samples += 1
            last_percent = number(m.group(1), "gpu_burn progress percent")
            body = m.group(2)
            proc_part, _, rest = body.partition("errors:")
            err_part, _, temp_part = rest.partition("temps:")
            procs = _PROC_RE.findall(proc_part)
            errs = _ERRORS_RE.findall(err_part)
            temps = re.findall(r"(?<![\d-])(-?\d+) C", temp_part)
            for i, (iters, gflops) in enumerate(procs):
                g = last.setdefault(i, {"max_gflops": None, "max_temp": None})
                flops = number(gflops, "gpu_burn Gflop/s", maximum=MAX_GPU_TFLOPS * 1000)
                g["iterations"], g["gflops"] = int(iters), flops
                g["max_gflops"] = max(g["max_gflops"] or 0.0, flops)
                if i < len(errs):
                    g["errors"] = int(errs[i][0])
                    g["warning"] = g.get("warning", False) or "WARNING" in errs[i][1]
                    g["died"] = g.get("died", False) or "DIED" in errs[i][1]
                if i < len(temps):
                    g["temp"] = int(temps[i])
                    g["max_temp"] = max(g["max_temp"] if g["max_temp"] is not None else -999, int(temps[i]))
            continue
        stripped = line.strip()
        if "Gflop/s" not in line and (
            stripped.startswith(("Couldn't init", "Error: ")) or "CUDA_ERROR_" in stripped
        ):
            init_errors.append(stripped)
    indices = sorted(set(names) | set(last) | set(statuses))
    if not indices and not init_errors and not no_clients:
        raise ParseError("not gpu_burn output: no GPU banner, progress line or summary")
    gpus = []
    for i in indices:
        g = last.get(i, {})
        name, uuid = names.get(i, (None, None))
        gpus.append(
            GpuBurnGpu(
                index=i,
                name=name,
                uuid=uuid,
                iterations=g.get("iterations"),
                gflops=g.get("gflops"),
                max_gflops=g.get("max_gflops"),
                errors=g.get("errors"),
                warning=g.get("warning", False),
                died=g.get("died", False),
                temperature_c=g.get("temp"),
                max_temperature_c=g.get("max_temp"),
                status=statuses.get(i),
            )
        )
    return GpuBurn(tuple(gpus), tested, tuple(init_errors), no_clients, samples, last_percent)
