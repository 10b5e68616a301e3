"""The SSH fan-out at many nodes, against a real SSH server (paramiko's, on 127.0.0.1).

At 1,000 nodes the controller held two threads per open session (a pool worker reading it and
paramiko's own thread): 64 sessions made 224 threads. Now a few threads connect, one thread
reads every session, and a session's slot is free again only when paramiko's thread is gone,
so the client's threads stay within the concurrency plus a constant.
"""

from __future__ import annotations

import socket
import threading
import time

import paramiko

from bringup.ssh import fanout as remote
from bringup.ssh.fanout import SshTarget, fan_out, fan_out_batches
from tests.unit.bringup.ssh import test_fanout_hostkeys as base

client_key = base.client_key  # the fixture: a client key file


class _Slow(base._Server):
    """Reads the script, waits a little (the node working), answers with it and exit status 0."""

    def check_channel_exec_request(self, channel, command):  # noqa: ANN001 - paramiko's signature
        def answer() -> None:
            script = b""
            while chunk := channel.recv(4096):
                script += chunk
            time.sleep(0.2)
            channel.sendall(b"got " + script)
            channel.sendall_stderr(b"note\n")
            channel.send_exit_status(0)
            channel.close()

        threading.Thread(target=answer, daemon=True).start()
        return True


_SERVER_SIDE = ("(negotiate)", "(answer)", "(serve)", "(sample)")  # this test's threads, by target


def client_threads() -> tuple[int, int]:
    """(client paramiko transports, every client-side thread) alive now, the main thread aside,
    and paramiko's handshake timers (a Timer per connection while it shakes hands, which may
    outlive the handshake by a moment)."""
    client = [
        t
        for t in threading.enumerate()
        if t is not threading.main_thread()
        and not (isinstance(t, paramiko.Transport) and t.server_mode)
        and not isinstance(t, threading.Timer)
        and not t.name.endswith(_SERVER_SIDE)
    ]
    return sum(isinstance(t, paramiko.Transport) for t in client), len(client)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _loopback_targets(port: int, key_file: str, count: int) -> list[SshTarget]:
    """Nodes n0.. all served by the one test SSH server on ``port``."""
    return [
        SshTarget(f"n{i}", "127.0.0.1", port=port, key_file=key_file, host_key_policy="off")
        for i in range(count)
    ]


def test_every_node_answers_once_and_the_threads_stay_bounded(client_key, monkeypatch):
    monkeypatch.setattr(remote, "CONNECTORS", 4)
    concurrency = 24  # two threads a session would be 48
    peak = {"transports": 0, "own": 0}
    sampling = threading.Event()
    sampling.set()

    def sample() -> None:
        while sampling.is_set():
            transports, own = client_threads()
            peak["transports"] = max(peak["transports"], transports)
            peak["own"] = max(peak["own"], own)
            time.sleep(0.005)

    with base.ssh_server(_Slow) as served:
        targets = [
            SshTarget(
                f"n{i:02d}", "127.0.0.1", port=served["port"], key_file=client_key, host_key_policy="off"
            )
            for i in range(60)
        ]
        targets.append(SshTarget("dead", "127.0.0.1", port=closed_port(), connect_timeout=2))
        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            results = list(fan_out(targets, lambda t: f"echo {t.name}\n", 20, concurrency))
        finally:
            sampling.clear()
            sampler.join()
    by_name = {r.name: r for r in results}
    assert len(results) == len(by_name) == 61  # each node exactly once
    assert by_name["n07"].stdout == b"got echo n07\n" and by_name["n07"].stderr == b"note\n"
    assert all(by_name[f"n{i:02d}"].rc == 0 and not by_name[f"n{i:02d}"].error for i in range(60))
    assert by_name["dead"].rc is None and by_name["dead"].error.startswith("unreachable: SSH to")
    assert 1 <= peak["transports"] <= concurrency  # a slot is free only once paramiko's thread ended
    assert peak["own"] <= concurrency + 4 + 1  # the sessions' paramiko threads, 4 connectors, one reader


def test_results_come_in_batches_of_what_is_in(client_key):
    """Every result once, in lists of what is in when the caller asks: the caller saves each list
    in one transaction. n0 answers at once; the others wait at a gate, answer together, and are
    all in before the caller asks again."""
    gate, answered = threading.Event(), []

    class _Gated(base._Server):
        def check_channel_exec_request(self, channel, command):  # noqa: ANN001
            def answer() -> None:
                script = b""
                while chunk := channel.recv(4096):
                    script += chunk
                if script != b"echo n0\n":
                    gate.wait(30)
                channel.sendall(script)
                channel.send_exit_status(0)
                channel.close()
                answered.append(script)

            threading.Thread(target=answer, daemon=True).start()
            return True

    with base.ssh_server(_Gated) as served:
        targets = _loopback_targets(served["port"], client_key, 12)
        batches = fan_out_batches(targets, lambda t: f"echo {t.name}\n", 20, 12)
        first = next(batches)
        gate.set()
        deadline = time.monotonic() + 20
        while len(answered) < 12 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the reader takes them in
        rest = list(batches)
    assert [r.name for r in first] == ["n0"]
    assert sorted(r.name for b in rest for r in b) == sorted(t.name for t in targets[1:])
    assert all(rest) and len(rest) < 11  # eleven answers in at once do not come one by one


def test_a_gathering_batch_takes_the_answers_that_follow_its_first(client_key):
    """With gather_s, a batch waits for the answers that come after its first (here: n0 at once,
    the rest when a gate opens, well within the window), and stops waiting once every node is
    in: the caller saves them in one transaction, not one each."""
    gate = threading.Event()

    class _Gated(base._Server):
        def check_channel_exec_request(self, channel, command):  # noqa: ANN001
            def answer() -> None:
                script = b""
                while chunk := channel.recv(4096):
                    script += chunk
                if script == b"echo n0\n":
                    gate.set()  # the others answer once n0 has
                else:
                    gate.wait(30)
                channel.sendall(script)
                channel.send_exit_status(0)
                channel.close()

            threading.Thread(target=answer, daemon=True).start()
            return True

    with base.ssh_server(_Gated) as served:
        targets = _loopback_targets(served["port"], client_key, 6)
        batches = list(fan_out_batches(targets, lambda t: f"echo {t.name}\n", 20, 6, gather_s=120))
    assert len(batches) == 1  # not 120 s: the batch ended when the last node was in
    assert sorted(r.name for r in batches[0]) == [t.name for t in targets]
    assert all(r.rc == 0 for r in batches[0])


def test_a_script_that_cannot_be_built_fails_its_node_only(client_key):
    def script(t: SshTarget) -> str:
        if t.name == "n1":
            raise ValueError("no plan for n1")
        return "true\n"

    with base.ssh_server(_Slow) as served:
        targets = _loopback_targets(served["port"], client_key, 3)
        results = {r.name: r for r in fan_out(targets, script, 20, 3)}
    assert results["n1"].error == "could not start: ValueError: no plan for n1"
    assert results["n0"].rc == results["n2"].rc == 0


def test_the_default_concurrency_follows_the_fleet_up_to_the_bound():
    assert remote.default_concurrency(1) == 1
    assert remote.default_concurrency(150) == 150  # a rack at once
    assert remote.default_concurrency(4000) == remote.MAX_CONCURRENCY == 200
    assert remote.default_concurrency(0) == 1
