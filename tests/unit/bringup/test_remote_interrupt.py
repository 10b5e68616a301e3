"""An interrupted fan-out (Ctrl-C while a burn-in stage waits, an error saving a result) starts
no node it had not started yet, and hands control back at once: the run's ending is recorded
while the nodes already running finish under their own time limit. Before, the pool's
``with`` block waited for every queued node: Ctrl-C went on to SSH into the rest of the rack."""

from __future__ import annotations

import socket

import pytest

from bringup import remote
from bringup.remote import SshTarget


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: connections are refused


def test_an_interrupted_fan_out_starts_no_more_nodes(monkeypatch):
    port = closed_port()
    targets = [SshTarget(f"n{i}", "127.0.0.1", port=port, connect_timeout=5) for i in range(6)]
    started = []
    real = remote.run_script

    def recording(target, script, time_limit):
        started.append(target.name)
        return real(target, script, time_limit)

    monkeypatch.setattr(remote, "run_script", recording)
    results = remote.fan_out(targets, "true", 30, concurrency=1)
    first = next(results)
    assert first.error  # a refused connection is one failed row
    with pytest.raises(KeyboardInterrupt):
        results.throw(KeyboardInterrupt())
    assert len(started) <= 2, started  # the one running when interrupted, at most one more
