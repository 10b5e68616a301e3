"""Run check commands on this machine, all at once, each under its own time limit (the I/O edge
of `burnin health`). A command still running at its limit is killed with its whole process
group and comes back ``timed_out`` with what it had printed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from burnin.checks.base import CommandOutput

MAX_PARALLEL = 8


def run_one(command: str, limit_s: float) -> CommandOutput:
    started = time.time()
    try:
        proc = subprocess.Popen(
            ["bash", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: a timeout kills the children too
        )
    except OSError as exc:
        return CommandOutput(
            "", error=f"cannot start bash: {exc}", rc=None, started_at=started, finished_at=time.time()
        )
    try:
        out, err = proc.communicate(timeout=max(0.1, limit_s))
        timed_out = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=2)
        except subprocess.TimeoutExpired:  # a child in D state (a wedged driver) ignores SIGKILL
            out, err = b"", b""
        timed_out = True
    return CommandOutput(
        out.decode(errors="replace"),
        err.decode(errors="replace"),
        rc=None if timed_out else proc.returncode,
        timed_out=timed_out,
        started_at=started,
        finished_at=time.time(),
    )


def run_all(limits: Mapping[str, float]) -> dict[str, CommandOutput]:
    """Each command (-> its limit in seconds) run once, in parallel; command -> its output."""
    if not limits:
        return {}
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(limits))) as pool:
        futures = {cmd: pool.submit(run_one, cmd, limit) for cmd, limit in limits.items()}
        return {cmd: f.result() for cmd, f in futures.items()}
