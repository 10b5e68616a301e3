"""Host performance checks of the `host` stage: memory bandwidth, local NVMe, CPU throttling.

The node tests large GPU clouds run before a node joins the fleet (docs/reference.md, "Host
(node) tests"): host memory bandwidth with sysbench, local NVMe sequential throughput, random
IOPS and latency with fio, and a sustained load on every CPU watched for thermal throttling.
Each judges against the profile's ``host_perf`` floors and runs only when they are set.

They are a stage of their own, not preflight: together they load the node for minutes (10 s of
memory reads, 3 x 10 s of fio plus its scratch file, 120 s of CPU load on the reference
profile), and fio writes to a disk; preflight is read-only and takes seconds.
"""

from __future__ import annotations

import shlex
import statistics

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, section_mark, sections
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.cpu_load import parse_clock_samples, parse_stress_ng_brief, parse_throttle_counts
from burnin.parsers.hardware import FioJob, parse_fio_json
from burnin.parsers.sysbench import parse_sysbench_memory
from burnin.result import Action, Finding, Result, critical, warning

FIO_FILE = "burnin-fio.scratch"
FIO_JOBS = ("seqwrite", "seqread", "randread")
# fio's own start-up and the scratch file's creation, on top of its jobs' run time.
_FIO_OVERHEAD_S = 60
_THROTTLE_GLOB = "/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle/*_throttle_count"
_FREQ_GLOB = "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_cur_freq"
CLOCK_SAMPLE_S = 5


@register
class MemoryBandwidth(Check):
    name = "memory_bandwidth"
    stages = ("host",)
    reads = ("sysbench memory",)
    judges = ("host_perf.memory_bandwidth_gbps", "host_perf.memory_seconds")
    description = (
        "host memory read bandwidth over every CPU thread reaches the profile's floor (sysbench memory)"
    )

    def applies(self, profile: Profile) -> bool:
        return profile.host_perf.judges_memory()

    def timeout(self, profile: Profile) -> int:
        return int(profile.host_perf.memory_seconds) + 60  # + allocating a buffer per thread

    def command(self, profile: Profile) -> str:
        hp = profile.host_perf
        # One buffer per thread (scope local), each larger than the last-level cache, read
        # sequentially until the time is up: DRAM bandwidth, on every NUMA node at once.
        return (
            "sysbench memory --threads=$(nproc) "
            f"--memory-block-size={hp.memory_block_mib}M --memory-total-size=100T --memory-scope=local "
            f"--memory-oper=read --memory-access-mode=seq --time={int(hp.memory_seconds)} run"
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        hp = profile.host_perf
        run = parse_sysbench_memory(output.stdout)
        if run.operation != "read" or run.scope != "local":
            raise ParseError(
                f"sysbench ran operation {run.operation}, scope {run.scope}: not this check's test"
            )
        metrics = {
            "memory_read_gbps": round(run.gb_per_s, 2),
            "threads": run.threads,
            "block_mib": run.block_kib / 1024,
            "seconds": run.total_time_s,
            "sysbench": run.version,
        }
        evidence = (
            f"{run.mib_transferred:.2f} MiB transferred ({run.mib_per_s:.2f} MiB/sec), {run.threads} threads, "
            f"block {run.block_kib}KiB, total time {run.total_time_s}s"
        )
        if run.total_time_s < 0.5 * hp.memory_seconds:
            return Result.unknown(
                self.name,
                f"sysbench ran {run.total_time_s:g} s of the {hp.memory_seconds:g} s asked: too short to judge",
                metrics,
            )
        findings: list[Finding] = []
        floor = hp.memory_bandwidth_gbps
        if floor is not None and run.gb_per_s < floor:
            findings.append(
                critical(
                    f"memory read bandwidth {run.gb_per_s:.1f} GB/s is below the floor {floor:g} GB/s: "
                    "a DIMM missing or slow, a channel down, or a BIOS memory setting (check memory_dimms)",
                    Action.RESEAT,
                    evidence,
                    "memory",
                )
            )
        return Result.judged(self.name, findings, metrics)


@register
class NvmePerf(Check):
    name = "nvme_perf"
    stages = ("host",)
    reads = ("fio --output-format=json",)
    judges = (
        "host_perf.nvme_seq_read_mbps",
        "host_perf.nvme_seq_write_mbps",
        "host_perf.nvme_randread_iops",
        "host_perf.nvme_randread_p99_us",
    )
    description = (
        "local NVMe sequential read/write throughput, 4 KiB random read IOPS and p99 latency reach the "
        "profile's floors (fio on a scratch file)"
    )

    def applies(self, profile: Profile) -> bool:
        return profile.host_perf.judges_nvme()

    def timeout(self, profile: Profile) -> int:
        return int(3 * profile.host_perf.nvme_seconds) + _FIO_OVERHEAD_S

    def command(self, profile: Profile) -> str:
        hp = profile.host_perf
        directory = shlex.quote(hp.nvme_directory)
        scratch = shlex.quote(f"{hp.nvme_directory.rstrip('/')}/{FIO_FILE}")
        size_mib = max(1, round(hp.nvme_file_gib * 1024))
        # A scratch file in a directory, never a raw device: the check must not destroy data.
        # The jobs run one after the other (stonewall); the write job fills the file the reads use.
        return (
            f"trap {shlex.quote('rm -f ' + scratch)} EXIT; "
            f"fio --output-format=json --directory={directory} --filename={FIO_FILE} --size={size_mib}M "
            f"--direct=1 --ioengine=libaio --time_based --runtime={int(hp.nvme_seconds)} "
            "--name=seqwrite --rw=write --bs=1M --iodepth=32 "
            "--name=seqread --stonewall --rw=read --bs=1M --iodepth=32 "
            "--name=randread --stonewall --rw=randread --bs=4k --iodepth=64"
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        hp = profile.host_perf
        jobs = {job.name: job for job in parse_fio_json(output.stdout)}
        missing = [name for name in FIO_JOBS if name not in jobs]
        if missing:
            raise ParseError(f"fio printed no {', '.join(missing)} job: not this check's run")
        failed = [f"{name} (error {job.error})" for name, job in jobs.items() if job.error]
        seq_write = jobs["seqwrite"].write.bw_kib_s * 1024 / 1e6
        seq_read = jobs["seqread"].read.bw_kib_s * 1024 / 1e6
        rand = jobs["randread"].read
        metrics = {
            "seq_write_mbps": round(seq_write, 1),
            "seq_read_mbps": round(seq_read, 1),
            "randread_iops": round(rand.iops),
            "randread_p99_us": rand.clat_p99_us,
            "directory": hp.nvme_directory,
        }
        if failed:
            return Result.unknown(self.name, f"fio job(s) failed: {', '.join(failed)}", metrics)
        evidence = _fio_evidence(jobs)
        subject = f"NVMe under {hp.nvme_directory}"
        findings: list[Finding] = []
        for what, value, floor, unit in (
            ("sequential read", seq_read, hp.nvme_seq_read_mbps, "MB/s"),
            ("sequential write", seq_write, hp.nvme_seq_write_mbps, "MB/s"),
            ("4 KiB random read", rand.iops, hp.nvme_randread_iops, "IOPS"),
        ):
            if floor is not None and value < floor:
                findings.append(
                    critical(
                        f"{subject}: {what} {value:,.0f} {unit} is below the floor {floor:,.0f} {unit}: "
                        "find the slow drive (nvme_health, its PCIe link), reseat it, RMA it if it stays slow",
                        Action.RESEAT,
                        evidence,
                        subject,
                    )
                )
        ceiling = hp.nvme_randread_p99_us
        incomplete = ""
        if ceiling is not None:
            if rand.clat_p99_us is None:
                incomplete = "fio reported no 99th percentile of the random read latency"
            elif rand.clat_p99_us > ceiling:
                findings.append(
                    critical(
                        f"{subject}: 4 KiB random read p99 latency {rand.clat_p99_us:,.0f} us is above "
                        f"{ceiling:,.0f} us: a drive stalls (nvme_health); reseat it, RMA it if it stays slow",
                        Action.RESEAT,
                        evidence,
                        subject,
                    )
                )
        return Result.judged(self.name, findings, metrics, incomplete=incomplete)


def _fio_evidence(jobs: dict[str, FioJob]) -> str:
    w, r, rr = jobs["seqwrite"].write, jobs["seqread"].read, jobs["randread"].read
    return (
        f"seqwrite bw={w.bw_kib_s:.0f}KiB/s; seqread bw={r.bw_kib_s:.0f}KiB/s; "
        f"randread iops={rr.iops:.0f} clat p99={rr.clat_p99_us}us"
    )


@register
class CpuThrottle(Check):
    name = "cpu_throttle"
    stages = ("host",)
    reads = ("cpu_throttle (thermal counters + stress-ng)",)
    judges = ("host_perf.cpu_load_seconds", "host_perf.cpu_min_load_mhz")
    description = (
        "a sustained load on every CPU raises no thermal throttle counter (stress-ng, "
        "/sys/devices/system/cpu/cpu*/thermal_throttle); clocks under load recorded"
    )

    def applies(self, profile: Profile) -> bool:
        return profile.host_perf.cpu_load_seconds is not None

    def timeout(self, profile: Profile) -> int:
        return int(profile.host_perf.cpu_load_seconds or 0) + 60

    def command(self, profile: Profile) -> str:
        seconds = int(profile.host_perf.cpu_load_seconds or 0)
        # Without the counters there is no evidence to judge: the load is not run (a VM, an AMD CPU).
        return "\n".join(
            [
                section_mark("throttle_before"),
                f"grep -H . {_THROTTLE_GLOB} 2>/dev/null",
                f"if ! ls {_THROTTLE_GLOB} >/dev/null 2>&1; then exit 0; fi",
                "o=$(mktemp) || exit 1; trap 'rm -f \"$o\"' EXIT",
                f'stress-ng --cpu 0 --cpu-method matrixprod --timeout {seconds} --metrics-brief >"$o" 2>&1 &',
                "p=$!",
                section_mark("cpu_clocks"),
                f'while kill -0 "$p" 2>/dev/null; do sleep {CLOCK_SAMPLE_S}; kill -0 "$p" 2>/dev/null || break; '
                f"echo khz $(cat {_FREQ_GLOB} 2>/dev/null); done",
                'wait "$p"; rc=$?',
                section_mark("cpu_load"),
                'cat "$o"; echo "stress-ng exit status $rc"',
                section_mark("throttle_after"),
                f"grep -H . {_THROTTLE_GLOB} 2>/dev/null",
                "exit 0",
            ]
        )

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        hp = profile.host_perf
        parts = sections(output.stdout)
        if "throttle_before" not in parts:
            raise ParseError("no 'throttle_before' section: not this check's output")
        before = parse_throttle_counts(parts["throttle_before"])
        if not before:
            return Result.unknown(
                self.name,
                "no thermal throttle counters in /sys/devices/system/cpu/cpu*/thermal_throttle "
                "(a VM or a CPU without them): throttling cannot be seen, the load was not run",
            )
        for name in ("cpu_clocks", "cpu_load", "throttle_after"):
            if name not in parts:
                raise ParseError(f"no {name!r} section: the output is cut short")
        run = parse_stress_ng_brief(parts["cpu_load"])
        after = parse_throttle_counts(parts["throttle_after"])
        clocks = [mhz for sample in parse_clock_samples(parts["cpu_clocks"]) for mhz in sample]
        metrics: dict = {
            "cpus_with_counters": len({cpu for cpu, _ in before}),
            "load_seconds": run.real_time_s,
            "bogo_ops_per_s": run.bogo_ops_per_s,
            "min_mhz_under_load": round(min(clocks)) if clocks else None,
            "median_mhz_under_load": round(statistics.median(clocks)) if clocks else None,
        }
        if run.exit_status != 0 or not run.completed or run.real_time_s is None:
            why = run.failure or (
                "stress-ng is not installed (the burnin_tools role installs it)"
                if run.exit_status == 127
                else f"exit status {run.exit_status}"
            )
            return Result.unknown(self.name, f"stress-ng did not complete its load: {why}", metrics)
        if run.real_time_s < 0.9 * (hp.cpu_load_seconds or 0):
            return Result.unknown(
                self.name,
                f"stress-ng loaded the CPUs {run.real_time_s:g} s of the {hp.cpu_load_seconds:g} s asked",
                metrics,
            )
        missing = sorted(set(before) - set(after))
        if missing:
            raise ParseError(f"cpu{missing[0][0]} {missing[0][1]} was not read after the load")
        rises = {key: after[key] - before[key] for key in before if after[key] != before[key]}
        metrics["throttle_events"] = sum(max(0, d) for d in rises.values())
        findings: list[Finding] = []
        if any(d < 0 for d in rises.values()):
            raise ParseError("a thermal throttle counter went down during the load (the node rebooted?)")
        for kind in ("package", "core"):
            hit = sorted({cpu for (cpu, name), d in rises.items() if name.startswith(kind) and d > 0})
            if not hit:
                continue
            most = max(d for (_, name), d in rises.items() if name.startswith(kind))
            shown = ", ".join(f"cpu{c}" for c in hit[:8]) + (
                f" and {len(hit) - 8} more" if len(hit) > 8 else ""
            )
            evidence = "\n".join(
                f"/sys/devices/system/cpu/cpu{cpu}/thermal_throttle/{name}: {before[(cpu, name)]} -> {after[(cpu, name)]}"
                for (cpu, name) in sorted(rises)[:16]
                if name.startswith(kind)
            )
            findings.append(
                critical(
                    f"CPU {kind} thermal throttling under {run.real_time_s:g} s of load: {len(hit)} CPU(s), up to "
                    f"{most} event(s) each ({shown}): reseat the heatsink with fresh paste, check the fans; "
                    "RMA the part that still runs hot",
                    Action.RESEAT,
                    evidence,
                    "CPU",
                )
            )
        floor = hp.cpu_min_load_mhz
        if floor is not None and clocks and min(clocks) < floor:
            findings.append(
                warning(
                    f"a CPU ran at {min(clocks):.0f} MHz under load, below {floor:g} MHz (its base clock): "
                    "power or thermal limits, or a BIOS power profile",
                    Action.MONITOR,
                    f"{len(clocks)} clock readings, lowest {min(clocks):.0f} MHz",
                    "CPU",
                )
            )
        return Result.judged(self.name, findings, metrics)
