"""Interrupted and concurrent runs on the virtual rack: real `burnin run` processes over real SSH, stopped
mid-run by Ctrl-C (SIGINT) and by kill -9, a run refused while another holds its nodes, then a
clean re-run and `burnin golden`: the nodes qualify.

Before the fix the stopped runs stayed `running` for ever and golden excluded every node they had
touched ("burn-in run 1 has not finished (still running or interrupted)"); a second run on the
same nodes was not stopped.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.fleet import run_list, runs
from burnin.cli import main as burnin_main
from tests.lab.conftest import REPO, ready_for_burnin

pytestmark = pytest.mark.lab

STAGES = "preflight,gpu,pcie"  # the stopped runs: stopped after preflight answered, in gpu
# The re-run and the golden selection: what a stopped run must not block. (One stage keeps the
# test about runs, not about what the gpu and pcie stages find on the lab's stand-ins.)
RERUN = "preflight"
QUICK = ["--set", "diag.stress_minutes=0.1", "--set", "diag.pcie_load_seconds=10"]
HEALTHY = ["node01", "node04"]
BURNIN = str(REPO / ".venv" / "bin" / "burnin")


class RunningBurnin:
    """`burnin run` in its own process; ``answered()`` returns once a node's first stage is in."""

    def __init__(self, base: list[str], rack: str):
        args = [
            BURNIN,
            *base,
            "run",
            "--rack",
            rack,
            "--nodes",
            ",".join(HEALTHY),
            "--stages",
            STAGES,
            *QUICK,
        ]
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # type: ignore[union-attr]

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def answered(self, timeout: float = 240) -> str:
        """The first 'node01: preflight PASS' line (stderr is not a terminal: one line per node)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            self.seen.append(line)
            if re.match(r"\s+node0[14]: preflight (PASS|WARN|FAIL|UNKNOWN)", line):
                return line
        self.proc.kill()
        pytest.fail(f"no node answered (rc={self.proc.poll()}):\n{''.join(self.seen)}")

    def wait(self) -> tuple[int, str]:
        """Its exit status and what it said; a process that does not end fails the test (before,
        reading its stdout to the end waited for ever on a controller that hung at exit)."""
        try:
            self.proc.wait(timeout=300)  # stdout: the drain thread's; stderr: the reader thread's
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"burnin did not end within 300 s:\n{''.join(self.seen)}")
        time.sleep(0.5)  # the reader thread drains stderr
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return self.proc.returncode, "".join(self.seen)


def burnin_runs(store) -> list:
    """The burn-in runs of the store, oldest first (discovery made a run of its own)."""
    return sorted(
        (v for v in run_list.list_runs(store, limit=None) if v.kind == "burnin"), key=lambda v: v.id
    )


@pytest.fixture
def rack(lab, tmp_path: Path):
    _, state = lab
    inv = Path(state.inventory).parent
    name = Path(state.inventory).stem
    base, store = ready_for_burnin(name, inv, tmp_path / "fleet.db", [n.name for n in state.nodes])
    return name, base, store


def test_ctrl_c_and_kill_9_mid_run_then_a_rerun_qualifies_and_a_second_run_refuses(rack):
    name, base, store = rack

    # 1. Ctrl-C after the first node answered: the run records `interrupted` (SIGINT) and frees its nodes.
    first = RunningBurnin(base, name)
    first.answered()
    first.proc.send_signal(signal.SIGINT)
    rc, said = first.wait()
    assert rc != 0, said
    (run1,) = burnin_runs(store)
    assert (run1.status, run1.end_reason, run1.pid) == ("interrupted", "SIGINT", first.proc.pid), said
    assert runs.holders(store) == []

    # 2. A second run while one holds the nodes refuses, naming the holder.
    second = RunningBurnin(base, name)
    second.answered()
    refused = CliRunner().invoke(
        burnin_main, [*base, "run", "--rack", name, "--nodes", "node04", "--stages", "preflight"]
    )
    assert refused.exit_code == 1, refused.output
    run2 = burnin_runs(store)[1]
    held = f"node04 is held by burnin run {run2.id} (controller {runs.this_host()} pid {second.proc.pid}"
    assert held in refused.output
    assert len(burnin_runs(store)) == 2  # the refused run left no record

    # 3. kill -9: no `finally` runs; the run stays `running` until the next command looks.
    os.kill(second.proc.pid, signal.SIGKILL)
    second.wait()
    assert store.get_run(run2.id).status == "running"

    # 4. A clean re-run marks it abandoned (its pid is gone), takes the nodes and passes.
    res = CliRunner().invoke(
        burnin_main,
        [*base, "run", "--rack", name, "--nodes", ",".join(HEALTHY), "--stages", RERUN, "--json", *QUICK],
    )
    assert res.exit_code == 0, res.output
    assert {o["node"]: o["verdict"] for o in json.loads(res.stdout)} == dict.fromkeys(HEALTHY, "PASS")
    ended = store.get_run(run2.id)
    assert ended.status == "abandoned"
    assert f"pid {second.proc.pid} on {runs.this_host()}) is gone" in ended.end_reason
    for node in HEALTHY:
        assert any(e.kind == "run-abandoned" and e.run_id == run2.id for e in store.history(node))

    # 5. The golden selection judges the latest results and waits on no stopped run.
    res = CliRunner().invoke(burnin_main, [*base, "golden", "--rack", name, "--stages", RERUN])
    assert res.exit_code == 0, res.output
    for node in HEALTHY:
        assert store.get_node(node).state == "golden", res.stderr
    assert [v.status for v in burnin_runs(store)] == ["interrupted", "abandoned", "done"]
    assert runs.holders(store) == []
