"""An interrupted fan-out (Ctrl-C while a burn-in stage waits, an error saving a result) starts
no node it had not started yet, and hands control back at once: the run's ending is recorded
while the nodes already running finish under their own time limit. Before, the pool's
``with`` block waited for every queued node: Ctrl-C went on to SSH into the rest of the rack."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from bringup.ssh import fanout as remote
from bringup.ssh.fanout import SshTarget
from tests.paths import REPO


def refusing() -> socket.socket:
    """A socket bound to a port and never listening: a connection to that port is refused at once,
    and no other socket (the silent listener, another test's server) can take the port meanwhile,
    as it could once a closed port's number was handed out again."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s


def test_an_interrupted_fan_out_starts_no_more_nodes(monkeypatch):
    """n0 refuses at once; n1..n5 accept and never say a word (each would take its connect
    timeout). With one at a time, n1 is running when the caller stops: the rest never start."""
    with socket.socket() as silent, refusing() as refused:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        targets = [SshTarget("n0", "127.0.0.1", port=refused.getsockname()[1], connect_timeout=2)] + [
            SshTarget(f"n{i}", "127.0.0.1", port=port, connect_timeout=2) for i in range(1, 6)
        ]
        started = []
        real = remote._open  # where the fan-out starts a node's session

        def recording(target, script, time_limit):
            started.append(target.name)
            return real(target, script, time_limit)

        monkeypatch.setattr(remote, "_open", recording)
        results = remote.fan_out(targets, "true", 30, concurrency=1)
        first = next(results)
        assert first.name == "n0" and first.error  # a refused connection is one failed row
        while len(started) < 2:  # n1 has started (it then waits 2 s for a banner)
            time.sleep(0.01)
        with pytest.raises(KeyboardInterrupt):
            results.throw(KeyboardInterrupt())
        assert started == ["n0", "n1"]  # n1 was running when interrupted; n2..n5 never start


# Ctrl-C while the caller is busy with an answer (judging it, saving it): the interrupt lands
# outside the fan-out's generator, which stays suspended while the exception lives on (click
# exits from inside its except block). Its threads must not keep the process from ending.
CHILD = """
import socket, sys, time
from bringup.ssh import fanout as remote
from bringup.ssh.fanout import SshTarget
from tests.paths import REPO
refused = socket.socket()
refused.bind(("127.0.0.1", 0))  # bound, never listening: a connection is refused at once
silent = socket.socket()
silent.bind(("127.0.0.1", 0))
silent.listen(8)
targets = [
    SshTarget("n0", "127.0.0.1", port=refused.getsockname()[1], connect_timeout=90),
    SshTarget("n1", "127.0.0.1", port=silent.getsockname()[1], connect_timeout=90),
]
results = remote.fan_out(targets, "true", 120, concurrency=1)
assert next(results).name == "n0"  # refused at once
time.sleep(0.5)  # n1 is being opened: it waits 90 s for a banner that never comes
try:
    raise KeyboardInterrupt
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def test_a_process_interrupted_outside_the_fan_out_ends_at_once():
    """Before, the process hung at exit until n1's connect timeout: the fan-out's threads were
    not daemons, and nothing told them to stop."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (130, "interrupted\n"), done.stderr[-2000:]
    assert time.monotonic() - started < 30
