"""Stopping processes: our own children, and detached daemons found again by their pid file.

Every stop is the same escalation: SIGTERM, a grace period, then SIGKILL. A daemon found by
pid is stopped only after its command line shows it is ours, so a recycled pid is never killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

KILL_WAIT_S = 5.0  # how long to wait for a SIGKILLed process to be gone


def read_pid(path: Path) -> int | None:
    """The pid in a pid file, or None when the file is missing or holds no number."""
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def cmdline_has(pid: int, *items: str) -> bool:
    """Whether process ``pid`` is alive and every one of ``items`` is an argument of it."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return all(item.encode() in argv for item in items)


def stop_child(proc: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """Stop a process this one started (and reap it): SIGTERM, then SIGKILL after ``grace_s``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(KILL_WAIT_S)


def stop_pid(pid: int, grace_s: float = 5.0) -> None:
    """Stop process ``pid``, which may or may not be our child: SIGTERM, SIGKILL after ``grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, KILL_WAIT_S)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        if wait_gone(pid, wait_s):
            return


def wait_gone(pid: int, timeout_s: float) -> bool:
    """Wait until ``pid`` has exited (reaping it if it is our child); False on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):  # not our child: someone else reaps it
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):  # a zombie of another parent: already dead
            return True
        time.sleep(0.05)
    return False
