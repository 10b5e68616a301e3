"""bringup.local.procs: stopping children and pid-file daemons (real processes)."""

from __future__ import annotations

import subprocess
import sys

from bringup.local.procs import cmdline_has, read_pid, stop_child, stop_pid, wait_gone

IGNORES_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"


def _start(code: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", code, "marker-arg"], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"  # its handler is in place
    return proc


def test_stop_child_escalates_to_sigkill_and_reaps():
    proc = _start(IGNORES_TERM)
    stop_child(proc, grace_s=0.3)
    assert proc.returncode == -9


def test_stop_pid_stops_a_process_by_pid_and_knows_it_is_ours():
    proc = _start(IGNORES_TERM)
    assert cmdline_has(proc.pid, "marker-arg") and not cmdline_has(proc.pid, "marker-arg", "other")
    stop_pid(proc.pid, grace_s=0.3)  # reaps it too: it is our child
    assert not cmdline_has(proc.pid, "marker-arg")
    assert wait_gone(proc.pid, 0.1)


def test_read_pid(tmp_path):
    (tmp_path / "a.pid").write_text("123\n")
    (tmp_path / "b.pid").write_text("not a pid")
    assert read_pid(tmp_path / "a.pid") == 123
    assert read_pid(tmp_path / "b.pid") is None and read_pid(tmp_path / "missing.pid") is None
