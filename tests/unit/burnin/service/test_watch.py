"""`burnin watch`: a kernel-log stream judged line by line drains through health_run's drain
path (a stand-in `scontrol` logs what it was asked), a counter reading that rises too fast
drains too, and the line buffer stays bounded whatever the stream."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.result import Verdict
from burnin.service.health_run import HealthOptions
from burnin.service.state import LAST_RESULT
from burnin.service.watch import LineSplitter, NvlinkReader, Watcher, WatchOptions, read_counters
from tests.profiles import SHIPPED_DIR, shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()
STANDIN_SAMPLES = Path(__file__).resolve().parents[4] / "bringup/lab/standins/samples"


def sample_lines(name: str) -> list[str]:
    text = (STANDIN_SAMPLES / name).read_text()
    return [ln for ln in text.splitlines() if not ln.startswith("#")]


@pytest.fixture
def scontrol(tmp_path, monkeypatch):
    """A stand-in `scontrol` first on PATH: `show node` prints node01 idle, as Slurm 22.05 did;
    every call is logged."""
    line = load("slurm_22_05_scontrol_show_node_o_idle.txt").strip().splitlines()[0]
    (tmp_path / "node.txt").write_text(line + "\n")
    log = tmp_path / "scontrol.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        f'#!/bin/bash\necho "$*" >> {log}\nif [ "$1 $2" = "show node" ]; then cat {tmp_path / "node.txt"}; fi\n'
    )
    (bin_dir / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return log


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def watcher(tmp_path: Path, clock: Clock | None = None) -> Watcher:
    health = HealthOptions(PROFILE, node="node01", state_dir=tmp_path / "state", textfile_dir=tmp_path / "tf")
    return Watcher(WatchOptions(health), now=clock or Clock())


def test_an_xid_79_in_the_stream_drains_once_with_the_health_reason(tmp_path, scontrol):
    w = watcher(tmp_path)
    boot = sample_lines("dmesg_iso_8xh100_boot_DERIVED.txt")
    xid = sample_lines("dmesg_iso_xid79_gpu0_DERIVED.txt")
    for line in boot + xid + xid:  # the fault logged twice: one drain
        w.line(line)
    updates = [c for c in scontrol.read_text().splitlines() if c.startswith("update")]
    assert len(updates) == 1, scontrol.read_text()
    assert updates[0].startswith("update NodeName=node01 State=DRAIN Reason=bringup: kernel_log: ")
    assert "Xid 79" in updates[0] and "0000:53:00" in updates[0]
    last = json.loads((tmp_path / "state" / LAST_RESULT).read_text())
    assert (last["failed_check"], last["slurm"], last["drain"]) == ("kernel_log", "drained", True)
    assert last["reason"] == updates[0].split("Reason=", 1)[1]
    assert (tmp_path / "tf" / "bringup_health.prom").read_text().count(
        'bringup_health_drain{node="node01"} 1'
    ) == 1
    assert w.stats.failed >= 2 and w.stats.actions == ["kernel_log: drained"]


def test_healthy_boot_lines_drain_nothing(tmp_path, scontrol):
    w = watcher(tmp_path)
    for line in sample_lines("dmesg_iso_8xh100_boot_DERIVED.txt"):
        w.line(line)
    assert not scontrol.exists() and w.stats.failed == 0 and w.stats.judged > 0


def test_a_link_going_down_between_readings_drains(tmp_path, scontrol):
    clock = Clock()
    w = watcher(tmp_path, clock)
    assert w.reading({"ib:mlx5_0/1:link_downed": 3}) is None  # the first: a baseline
    clock.t += 30
    assert w.reading({"ib:mlx5_0/1:link_downed": 3}).verdict is Verdict.PASS
    clock.t += 30
    result = w.reading({"ib:mlx5_0/1:link_downed": 4})
    assert result.verdict is Verdict.FAIL
    updates = [c for c in scontrol.read_text().splitlines() if c.startswith("update")]
    assert updates == [
        "update NodeName=node01 State=DRAIN Reason=bringup: error_rates: IB mlx5_0/1: link went down 1 time(s) in 30 s"
    ]


def test_read_counters_reads_the_lab_sysfs_tree(tmp_path):
    ports = tmp_path / "sys/class/infiniband/mlx5_0/ports/1/counters"
    ports.mkdir(parents=True)
    (ports / "symbol_error").write_text("7\n")
    (ports / "link_downed").write_text("1\n")
    (ports / "port_xmit_data").write_text("123456\n")  # not an error counter: not read
    dev = tmp_path / "sys/bus/pci/devices/0000:53:00.0"
    dev.mkdir(parents=True)
    (dev / "aer_dev_fatal").write_text("Undefined 0\nDLP 0\nTOTAL_ERR_FATAL 2\n")
    (dev / "aer_dev_nonfatal").write_text("garbage\n")  # unreadable: left out
    assert read_counters(tmp_path) == {
        "ib:mlx5_0/1:link_downed": 1,
        "ib:mlx5_0/1:symbol_error": 7,
        "aer:0000:53:00.0:fatal": 2,
    }


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.binary(max_size=300) | st.just(b"\n"), max_size=60), st.integers(min_value=8, max_value=64)
)
def test_the_splitter_never_holds_more_than_its_cap(chunks, cap):
    s = LineSplitter(cap)
    for chunk in chunks:
        for line in s.feed(chunk):
            assert len(line.encode("utf-8", "replace")) <= cap * 3  # 'replace' may widen a byte
        assert len(s.pending) <= cap
    whole = b"".join(chunks)
    if b"\n" not in whole:
        return
    # every line ended by a newline is given, cut at the cap
    given_lines = []
    s2 = LineSplitter(cap)
    for chunk in chunks:
        given_lines.extend(s2.feed(chunk))
    want = [ln[:cap].decode("utf-8", "replace") for ln in whole.split(b"\n")[:-1]]
    assert given_lines[: len(want)] == want


def test_a_flood_of_harmless_lines_does_not_grow_memory(tmp_path, scontrol):
    w = watcher(tmp_path)
    boot = sample_lines("dmesg_iso_8xh100_boot_DERIVED.txt")
    s = LineSplitter()
    blob = ("\n".join(boot) + "\n").encode()
    huge = b"2025-01-18T09:14:07,000001+00:00 " + b"x" * 100_000 + b"\n"  # one line far over the cap

    def flood(rounds: int) -> None:
        for _ in range(rounds):
            for line in s.feed(blob + huge):
                w.line(line)

    flood(5)  # warm: caches, compiled patterns
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    flood(40)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 64 * 1024, grown  # 40 rounds of every boot line and a huge one kept nothing
    assert len(s.pending) == 0 and s.cut == 45 and w.stats.failed == 0 and not scontrol.exists()


def test_burnin_watch_follows_a_source_and_drains(tmp_path, scontrol):
    """The command end to end: a source that prints the Xid 79 record after a while and keeps
    running (as `dmesg --follow-new` does); the watcher drains once and stops at --for."""
    from click.testing import CliRunner

    from burnin.cli import main as burnin_main

    xid = tmp_path / "xid.txt"
    xid.write_text("\n".join(sample_lines("dmesg_iso_xid79_gpu0_DERIVED.txt")) + "\n")
    source = tmp_path / "follow"
    source.write_text(f"#!/bin/bash\nsleep 0.5\ncat {xid}\nexec sleep 60\n")
    source.chmod(0o755)
    res = CliRunner().invoke(
        burnin_main,
        [
            "watch",
            "--profile",
            str(PROFILE.path),
            "--node",
            "node01",
            "--state-dir",
            str(tmp_path / "state"),
            "--source",
            str(source),
            "--sys-root",
            str(tmp_path),
            "--for",
            "3",
        ],
    )
    assert res.exit_code == 0, res.output
    updates = [c for c in scontrol.read_text().splitlines() if c.startswith("update")]
    assert len(updates) == 1 and "Reason=bringup: kernel_log: " in updates[0] and "Xid 79" in updates[0]
    assert "actions: kernel_log: drained" in res.output


@pytest.mark.parametrize(
    "line",
    [
        "2025-01-18T09:14:07,074562+00:00 NVRM: Xid (PCI:0000:53:00): 79, pid=0, GPU has fallen off the bus.",
        "2025-01-18T09:14:07+0000 node01 kernel: NVRM: Xid (PCI:0000:53:00): 79, pid=0, GPU has fallen off the bus.",
        "[1084456.074562] NVRM: Xid (PCI:0000:53:00): 79, pid=0, GPU has fallen off the bus.",
    ],
    ids=["dmesg-iso", "journalctl-short-iso", "dmesg-raw"],
)
def test_each_followers_format_is_judged(line):
    """The sources --source may name print these forms of the sample's Xid 79 line."""
    from burnin.service.watch import LineJudge

    result = LineJudge(PROFILE).judge(line)
    assert result is not None and result.verdict is Verdict.FAIL and "Xid 79" in result.findings[0].message


def _command(tmp_path: Path, body: str, name: str = "nvidia-smi-nvlink-e") -> str:
    script = tmp_path / name
    script.write_text("#!/bin/bash\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def test_nvlink_counters_read_from_nvidia_smi_and_a_rise_drains_naming_gpu_and_link(tmp_path, scontrol):
    reading = tmp_path / "reading.txt"
    reader = NvlinkReader(_command(tmp_path, f"cat {reading}"))
    clock = Clock()
    w = watcher(tmp_path, clock)
    reading.write_text(load("nvidia_smi_nvlink_e_8xh100_zero_DERIVED.txt"))
    assert w.reading(reader.read()) is None  # the baseline
    clock.t += 30
    reading.write_text(load("nvidia_smi_nvlink_e_8xh100_gpu3_link7_replays_DERIVED.txt"))
    result = w.reading(reader.read())
    assert result.verdict is Verdict.FAIL and result.metrics["counters"] == 8 * 18 * 3
    updates = [c for c in scontrol.read_text().splitlines() if c.startswith("update")]
    assert updates == [
        "update NodeName=node01 State=DRAIN Reason=bringup: error_rates: NVLink GPU 3 link 7: "
        "4500 CRC errors in 30 s (150/s, at or over 100/s)"
    ]


@pytest.mark.parametrize(
    "body",
    [
        "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9",
        "sleep 5",  # wedged: cut at the timeout
        "echo 'GPU 0: NVIDIA A100-PCIE-40GB (UUID: GPU-1)'",  # no NVLink: no counter
    ],
)
def test_nvlink_counters_unavailable_are_said_once_and_read_as_none(tmp_path, body, caplog):
    reader = NvlinkReader(_command(tmp_path, body), timeout_s=0.5)
    with caplog.at_level("WARNING"):
        assert reader.read() == {} and reader.read() == {}
    said = [r for r in caplog.records if "NVLink counters not read" in r.getMessage()]
    assert len(said) == 1 and reader.unavailable


def test_an_nvidia_smi_that_is_not_installed_reads_no_nvlink_counter(tmp_path):
    reader = NvlinkReader(str(tmp_path / "no-such-nvidia-smi"))
    assert reader.read() == {} and "No such file" in reader.unavailable


def test_burnin_watch_reads_the_nvlink_command_every_interval(tmp_path, scontrol):
    """--nvlink-command: its first reading is the baseline, the next one's rise drains."""
    from click.testing import CliRunner

    from burnin.cli import main as burnin_main

    zero, bad = tmp_path / "zero.txt", tmp_path / "bad.txt"
    zero.write_text(load("nvidia_smi_nvlink_e_8xh100_zero_DERIVED.txt"))
    bad.write_text(load("nvidia_smi_nvlink_e_8xh100_gpu3_link7_replays_DERIVED.txt"))
    seen = tmp_path / "seen"
    command = _command(tmp_path, f"if [ -e {seen} ]; then cat {bad}; else touch {seen}; cat {zero}; fi")
    source = _command(tmp_path, "exec sleep 60", "follow")
    res = CliRunner().invoke(
        burnin_main,
        [
            *("watch", "--profile", str(PROFILE.path), "--node", "node01"),
            *("--state-dir", str(tmp_path / "state"), "--source", source, "--sys-root", str(tmp_path)),
            *("--interval", "1", "--nvlink-command", command, "--for", "2.5"),
        ],
    )
    assert res.exit_code == 0, res.output
    updates = [c for c in scontrol.read_text().splitlines() if c.startswith("update")]
    assert (
        len(updates) == 1
        and "Reason=bringup: error_rates: NVLink GPU 3 link 7: 4500 CRC errors" in updates[0]
    )
    assert "actions: error_rates: drained" in res.output


def test_burnin_watch_on_a_profile_without_nvlink_never_runs_nvidia_smi(tmp_path, scontrol):
    """An MI300X node (gpu.vendor amd, no NVLink): the NVLink command is not run at all, the other
    counters and the kernel log are still watched."""
    from click.testing import CliRunner

    from burnin.cli import main as burnin_main

    ran = tmp_path / "ran"
    command = _command(tmp_path, f"touch {ran}")
    source = _command(tmp_path, "exec sleep 60", "follow")
    mi300x = SHIPPED_DIR / "mi300x-8x400g.yml"
    res = CliRunner().invoke(
        burnin_main,
        [
            *("watch", "--profile", str(mi300x), "--node", "node01"),
            *("--state-dir", str(tmp_path / "state"), "--source", source, "--sys-root", str(tmp_path)),
            *("--interval", "1", "--nvlink-command", command, "--for", "1.5"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert not ran.exists()
