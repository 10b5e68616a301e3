"""The host stage's checks (memory bandwidth, local NVMe, CPU throttling) judged against the
profile's host_perf floors on real-format samples, and their commands really run here."""

from __future__ import annotations

import json
import subprocess

import pytest

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge, sections
from burnin.checks.host_perf import CpuThrottle, MemoryBandwidth, NvmePerf
from burnin.result import Action, Verdict
from burnin.stages import ALL_STAGES, STAGE_ORDER, parse_stages, stage_checks
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()
SYSBENCH = "sysbench_memory_read_local_64m_2threads_kvm.txt"  # 38.7 GB/s
FIO = "fio_json_seqwrite_seqread_randread_ext4_libaio.json"  # read 1,484 MB/s, 145,712 IOPS, p99 3,293 us
CALM = "cpu_throttle_2x8480c_no_events_SYNTHETIC.txt"
HOT = "cpu_throttle_2x8480c_socket1_throttled_SYNTHETIC.txt"


def _run(check, text: str, *overrides: str, rc: int = 0):
    return judge(check, CommandOutput(stdout=text, rc=rc), apply_overrides(PROFILE, overrides))


def test_the_host_stage_runs_on_request_after_preflight() -> None:
    assert ALL_STAGES[:2] == ("preflight", "host") and "host" not in STAGE_ORDER
    assert parse_stages("nccl,host,preflight") == ["preflight", "host", "nccl"]
    assert [c.name for c in stage_checks("host", PROFILE)] == [
        "memory_bandwidth",
        "nvme_perf",
        "cpu_throttle",
    ]
    bare = apply_overrides(
        PROFILE,
        [
            f"host_perf.{k}=null"
            for k in (
                "memory_bandwidth_gbps",
                "nvme_seq_read_mbps",
                "nvme_seq_write_mbps",
                "nvme_randread_iops",
                "nvme_randread_p99_us",
                "cpu_load_seconds",
            )
        ],
    )
    assert stage_checks("host", bare) == []  # no floors: nothing to judge, nothing run


def test_memory_below_its_floor_fails_reseat_first() -> None:
    r = _run(MemoryBandwidth(), load(SYSBENCH))
    assert r.verdict is Verdict.FAIL and r.metrics["memory_read_gbps"] == pytest.approx(38.69, abs=0.01)
    (f,) = r.findings
    assert f.action is Action.RESEAT and "250 GB/s" in f.message and "36901.08 MiB/sec" in f.evidence
    assert (
        _run(MemoryBandwidth(), load(SYSBENCH), "host_perf.memory_bandwidth_gbps=38").verdict is Verdict.PASS
    )


def test_memory_run_too_short_or_of_another_kind_is_unknown() -> None:
    short = _run(
        MemoryBandwidth(), load(SYSBENCH), "host_perf.memory_seconds=60", "host_perf.memory_bandwidth_gbps=1"
    )
    assert short.verdict is Verdict.UNKNOWN and "too short" in short.reason
    write = load(SYSBENCH).replace("operation: read", "operation: write")
    assert _run(MemoryBandwidth(), write, "host_perf.memory_bandwidth_gbps=1").verdict is Verdict.UNKNOWN


def test_nvme_each_floor_judged_and_named() -> None:
    r = _run(NvmePerf(), load(FIO))
    assert r.verdict is Verdict.FAIL and {f.action for f in r.findings} == {Action.RESEAT}
    messages = " ".join(f.message for f in r.findings)
    assert "sequential read 1,484 MB/s" in messages and "145,712 IOPS" in messages and "3,293 us" in messages
    assert "sequential write" not in messages  # 6,951 MB/s clears 1,900
    assert {f.subject for f in r.findings} == {"NVMe under /raid"}
    assert r.metrics["randread_iops"] == 145712 and r.metrics["randread_p99_us"] == pytest.approx(3293.184)


def test_nvme_a_failed_fio_job_or_no_percentile_is_unknown() -> None:
    text = load(FIO)
    doc = json.loads(text)
    doc["jobs"][1]["error"] = 5
    failed = _run(NvmePerf(), json.dumps(doc) + "\n", rc=1)
    assert failed.verdict is Verdict.UNKNOWN and "seqread (error 5)" in failed.reason
    doc = json.loads(text)
    del doc["jobs"][2]["read"]["clat_ns"]["percentile"]
    lenient = ("host_perf.nvme_seq_read_mbps=1000", "host_perf.nvme_randread_iops=100000")
    assert _run(NvmePerf(), json.dumps(doc) + "\n", *lenient).verdict is Verdict.UNKNOWN


def test_cpu_throttle_counters_unchanged_pass_and_rising_fail() -> None:
    calm = _run(CpuThrottle(), load(CALM))
    assert calm.verdict is Verdict.PASS and calm.metrics["throttle_events"] == 0
    assert calm.metrics["min_mhz_under_load"] == 2500
    hot = _run(CpuThrottle(), load(HOT))
    assert hot.verdict is Verdict.FAIL
    package, core, clock = hot.findings
    assert package.action is core.action is Action.RESEAT and package.subject == "CPU"
    assert "112 CPU(s), up to 3 event(s)" in package.message and "cpu56" in package.message
    assert "cpu60, cpu61" in core.message and "core_throttle_count: 0 -> 7" in core.evidence
    assert clock.action is Action.MONITOR and "800 MHz" in clock.message


def test_cpu_throttle_without_counters_is_unknown_never_a_pass() -> None:
    r = _run(CpuThrottle(), load("cpu_throttle_kvm_no_counters.txt"))
    assert r.verdict is Verdict.UNKNOWN and "no thermal throttle counters" in r.reason


def _edit_section(text: str, name: str, new: str) -> str:
    parts = sections(text)
    parts[name] = new
    return "".join(f"@@burnin-section {k}\n{v}" if k else v for k, v in parts.items())


def test_cpu_throttle_a_load_that_did_not_run_or_counters_lost_is_unknown() -> None:
    text = load(CALM)
    failed = _edit_section(
        text, "cpu_load", "stress-ng: fail:  [9] cpu: out of memory\nstress-ng exit status 2\n"
    )
    r = _run(CpuThrottle(), failed)
    assert r.verdict is Verdict.UNKNOWN and "out of memory" in r.reason
    missing = _edit_section(
        text, "cpu_load", "bash: line 5: stress-ng: command not found\nstress-ng exit status 127\n"
    )
    r = _run(CpuThrottle(), missing)
    assert r.verdict is Verdict.UNKNOWN and "stress-ng is not installed" in r.reason
    short = _run(CpuThrottle(), text, "host_perf.cpu_load_seconds=600")  # 120 s of the 600 asked
    assert short.verdict is Verdict.UNKNOWN and "120.04 s of the 600 s" in short.reason
    after = sections(text)["throttle_after"].splitlines(keepends=True)
    assert (
        _run(CpuThrottle(), _edit_section(text, "throttle_after", "".join(after[:-1]))).verdict
        is Verdict.UNKNOWN
    )
    went_down = _edit_section(
        text,
        "throttle_after",
        sections(text)["throttle_after"].replace("core_throttle_count:2", "core_throttle_count:0"),
    )
    assert _run(CpuThrottle(), went_down).verdict is Verdict.UNKNOWN


def test_a_slow_clock_alone_is_a_warning() -> None:
    assert _run(CpuThrottle(), load(CALM), "host_perf.cpu_min_load_mhz=2550").verdict is Verdict.WARN


def test_nvme_command_writes_a_scratch_file_never_a_device() -> None:
    cmd = NvmePerf().command(apply_overrides(PROFILE, ["host_perf.nvme_directory=/data/my scratch"]))
    assert "/dev/" not in cmd and "--directory='/data/my scratch'" in cmd


# ---- the commands, really run on this machine (sysbench, fio, stress-ng: scripts/install-system-deps.sh)


def _really(check, profile) -> CommandOutput:
    done = subprocess.run(
        ["bash", "-c", check.command(profile)], capture_output=True, text=True, timeout=check.timeout(profile)
    )
    return CommandOutput(stdout=done.stdout, stderr=done.stderr, rc=done.returncode)


def test_the_commands_run_here_and_are_judged(tmp_path) -> None:
    scratch = tmp_path / "a scratch dir"  # a space in the path: the clean-up must still find the file
    scratch.mkdir()
    quick = apply_overrides(
        PROFILE,
        [
            "host_perf.memory_seconds=1",
            "host_perf.memory_block_mib=8",
            "host_perf.memory_bandwidth_gbps=0.001",
            f"host_perf.nvme_directory={scratch}",
            "host_perf.nvme_file_gib=0.02",
            "host_perf.nvme_seconds=1",
            "host_perf.nvme_seq_read_mbps=1",
            "host_perf.nvme_seq_write_mbps=1",
            "host_perf.nvme_randread_iops=1",
            "host_perf.nvme_randread_p99_us=10000000",
            "host_perf.cpu_load_seconds=1",
        ],
    )
    memory = judge(MemoryBandwidth(), _really(MemoryBandwidth(), quick), quick)
    assert memory.verdict is Verdict.PASS, memory.reason
    assert memory.metrics["threads"] >= 1 and memory.metrics["memory_read_gbps"] > 0
    nvme = judge(NvmePerf(), _really(NvmePerf(), quick), quick)
    assert nvme.verdict is Verdict.PASS, nvme.reason
    assert list(scratch.iterdir()) == []  # the scratch file is gone
    cpu = judge(CpuThrottle(), _really(CpuThrottle(), quick), quick)
    assert cpu.verdict is not Verdict.FAIL  # this VM has no counters (UNKNOWN); a host with them: judged


def test_a_missing_scratch_directory_is_unknown_and_not_created(tmp_path) -> None:
    # /raid not mounted: fio refuses the directory (it must not test the OS drive instead).
    missing = tmp_path / "raid"
    quick = apply_overrides(
        PROFILE,
        [
            f"host_perf.nvme_directory={missing}",
            "host_perf.nvme_file_gib=0.02",
            "host_perf.nvme_seconds=1",
            "host_perf.nvme_seq_read_mbps=1",
        ],
    )
    result = judge(NvmePerf(), _really(NvmePerf(), quick), quick)
    assert result.verdict is Verdict.UNKNOWN and f"directory={missing}" in result.reason, result.reason
    assert not missing.exists()
