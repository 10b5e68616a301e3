"""SSH fan-out on paramiko: bounded concurrency, per-node time limits, partial results.

A script goes to ``bash -s`` on each node over one SSH connection; what came back (stdout,
stderr, exit code) is returned even when the node hit its time limit half-way, so the caller
keeps whatever finished. One node that cannot be reached is a result with ``error`` set, never
an exception that stops the others.

Many nodes (``fan_out``): at most ``concurrency`` sessions are open at once; a few threads open
them and one thread reads them all, so the controller holds about one thread per open session
(paramiko's own), not two. ``default_concurrency`` follows the number of nodes up to
``MAX_CONCURRENCY``, which keeps a fan-out within 256 threads.

Targets come from the same inventory variables Ansible uses (ansible_host, ansible_user,
ansible_port, ansible_ssh_private_key_file, StrictHostKeyChecking and UserKnownHostsFile in
ansible_ssh_common_args).

Each connection is opened by ``bringup.ssh.connect.connect`` (the target, its host key checked
against the keys the fleet store recorded or known_hosts, never accepted on first sight); a key
the host must not show is refused here with a line that says how to record it.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import queue
import select
import selectors
import shlex
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from bringup.local.capture import STREAM_CAP, HeadTail
from bringup.ssh.connect import SshTarget, connect
from bringup.ssh.hostkeys import PinnedKeys, fingerprint, known_hosts_text
from bringup.ssh.hostkeys import pinned as pinned_keys

__all__ = [
    "DEFAULT_CONCURRENCY",
    "MAX_CONCURRENCY",
    "RemoteResult",
    "SshTarget",
    "default_concurrency",
    "describe_error",
    "fan_out",
    "fan_out_batches",
    "host_key_refusal",
    "openssh_known_hosts",
    "run_script",
    "target_for_node",
    "target_from_vars",
]

DEFAULT_CONCURRENCY = 64
# Sessions at once unless told otherwise: 200 paramiko threads, CONNECTORS connecting (each with
# paramiko's handshake timer), one reader and the caller's own stay under 256 threads.
MAX_CONCURRENCY = 200
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteResult:
    name: str
    stdout: bytes = b""
    stderr: bytes = b""
    rc: int | None = None
    error: str = ""  # could not connect / authenticate / finish in time: why
    started_at: float = 0.0  # this machine's clock before and after
    finished_at: float = 0.0
    cut: str = ""  # what was cut out of stdout/stderr to keep within the bound ('' : nothing)


def default_concurrency(nodes: int) -> int:
    """Nodes at once when the caller did not say: all of them, up to MAX_CONCURRENCY."""
    return max(1, min(nodes, MAX_CONCURRENCY))


def _ssh_option(args: str, option: str) -> str | None:
    """The value of ``-o Option=value`` (or ``-oOption=value``, ``-o 'Option value'``) in ssh args."""
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    for i, word in enumerate(words):
        if word == "-o" and i + 1 < len(words):
            setting = words[i + 1]
        elif word.startswith("-o") and len(word) > 2:
            setting = word[2:]
        else:
            continue
        key, sep, value = setting.partition("=")
        if not sep:
            key, _, value = setting.partition(" ")
        if key.strip().lower() == option.lower():
            return value.strip()
    return None


def target_from_vars(
    name: str,
    hostvars: Mapping[str, Any],
    inventory_dir: Path,
    ip: str | None = None,
    pinned: PinnedKeys | None = None,
) -> SshTarget:
    """An SshTarget from a host's inventory variables; ``ip`` (the fleet store's) wins, and
    ``pinned`` (the keys the store recorded for the node) is what its host key must be."""
    key = hostvars.get("ansible_ssh_private_key_file") or hostvars.get("ansible_private_key_file")
    if key:
        key = str(key).replace("{{ inventory_dir }}", str(inventory_dir))
        key = str(Path(key).expanduser())
    common = (
        str(hostvars.get("ansible_ssh_common_args", ""))
        + " "
        + str(hostvars.get("ansible_ssh_extra_args", ""))
    )
    common = common.replace("{{ inventory_dir }}", str(inventory_dir))
    checking = (_ssh_option(common, "StrictHostKeyChecking") or "").lower()
    policy = {"no": "off", "off": "off", "yes": "strict"}.get(checking, "accept-new")
    known = _ssh_option(common, "UserKnownHostsFile")
    if known:
        known = str(Path(known).expanduser())
    if policy == "off" and not (pinned and pinned.keys):
        log.warning("%s: SSH host key not checked (StrictHostKeyChecking=no in its inventory)", name)
    return SshTarget(
        name=name,
        host=ip or str(hostvars.get("ansible_host") or name),
        user=str(hostvars.get("ansible_user") or "root"),
        port=int(hostvars.get("ansible_port") or 22),
        key_file=key,
        host_key_policy=policy,
        pinned=pinned if pinned and pinned.keys else None,
        known_hosts_file=known,
    )


_known_hosts_dir: Path | None = None
_known_hosts_lock = threading.Lock()


def openssh_known_hosts(targets: Iterable[SshTarget]) -> str | None:
    """A known_hosts file holding exactly the targets' recorded keys, for an OpenSSH client this
    process starts (mpirun's ssh), or None unless every target has recorded keys. One file per
    distinct content (0600), in a private directory removed when the process exits."""
    global _known_hosts_dir
    targets = list(targets)
    if not targets or any(t.pinned is None or not t.pinned.keys for t in targets):
        return None
    text = known_hosts_text([(t.host, t.port, t.pinned.keys) for t in targets if t.pinned])
    with _known_hosts_lock:
        if _known_hosts_dir is None:
            _known_hosts_dir = Path(tempfile.mkdtemp(prefix="bringup-known-hosts-"))
            atexit.register(shutil.rmtree, _known_hosts_dir, True)
        path = _known_hosts_dir / hashlib.sha256(text.encode()).hexdigest()[:16]
        if not path.exists():
            path.write_text(text)
            path.chmod(0o600)
    return str(path)


def target_for_node(name: str, hostvars: Mapping[str, Any], inventory_dir: Path, node: Any) -> SshTarget:
    """``target_from_vars`` for a fleet node: the store's address and the keys it recorded."""
    return target_from_vars(name, hostvars, inventory_dir, ip=node.ip, pinned=pinned_keys(node))


def describe_error(exc: BaseException, target: SshTarget) -> str:
    """One line saying what went wrong, for the node's record (no secrets in paramiko's errors)."""
    where = f"{target.user}@{target.host}:{target.port}"
    if isinstance(exc, paramiko.AuthenticationException):
        return f"SSH authentication failed for {where}"
    unknown = isinstance(exc, paramiko.SSHException) and "not found in known_hosts" in str(exc)
    if isinstance(exc, paramiko.BadHostKeyException) or unknown:
        return host_key_refusal(target, getattr(exc, "key", None))
    if isinstance(exc, socket.timeout | TimeoutError):
        return f"unreachable: SSH to {where} timed out"
    if isinstance(exc, OSError) and exc.filename is not None and target.key_file:
        # The key file, read when logging in (the node answered): ours to fix, not the node's.
        return (
            f"SSH to {where}: cannot read the key file {exc.filename}: {exc.strerror or exc}; "
            "set ansible_ssh_private_key_file to a private key that exists"
        )
    if isinstance(exc, OSError):
        return f"unreachable: SSH to {where}: {exc.strerror or exc}"
    return f"SSH to {where} failed: {type(exc).__name__}: {exc}"


def host_key_refusal(target: SshTarget, shown: paramiko.PKey | None = None) -> str:
    """The one line for a host whose key is not the one it must show."""
    node = f"{target.name} ({target.host})" if target.name != target.host else target.host
    seen = f" (it shows {fingerprint(f'{shown.get_name()} {shown.get_base64()}')})" if shown else ""
    pinned = target.pinned
    if pinned is not None and pinned.keys:
        source = pinned.source or "an earlier run"
        when = pinned.recorded_at[:10] or "an earlier date"
        how = (
            f"when it was provisioned on {when} ({source})"
            if source.startswith("provision")
            else f"on {when} by {source}"
        )
        return (
            f"SSH host key of {node} does not match the key recorded {how}{seen}: re-imaged or "
            f"impersonated? re-provision it, or once you know why, `bringup hostkeys forget {target.name}` "
            "and `bringup hostkeys scan`"
        )
    where = target.known_hosts_file or "~/.ssh/known_hosts"
    return (
        f"SSH host key of {node} is not recorded{seen}: provisioning records it; for a node "
        f"provisioned otherwise run `bringup hostkeys scan --rack RACK --nodes {target.name}` "
        f"(trust on first use) or add it to {where}"
    )


class _Stream:
    """One node's command being read: its output so far (bounded), its time limit, and the rule
    for its end. ``run_script`` reads one; the fan-out's reader thread reads many at once."""

    def __init__(
        self,
        target: SshTarget,
        client: paramiko.SSHClient,
        started: float,
        time_limit: float,
        max_output: int,
    ) -> None:
        self.target, self.client, self.started = target, client, started
        self.time_limit, self.deadline = time_limit, started + time_limit
        self.out, self.err = HeadTail(max_output), HeadTail(max_output)
        self.channel: paramiko.Channel | None = None

    def start(self, script: str) -> None:
        self.channel = self.client.get_transport().open_session()  # type: ignore[union-attr]
        self.channel.exec_command("bash -s")
        self.channel.sendall(script.encode())
        self.channel.shutdown_write()

    def pump(self) -> None:
        """Take what has arrived, without waiting."""
        channel = self.channel
        assert channel is not None
        while channel.recv_ready():
            self.out.write(channel.recv(65536))
        while channel.recv_stderr_ready():
            self.err.write(channel.recv_stderr(65536))

    def finished(self, now: float) -> RemoteResult | None:
        """The result once the stream has ended or the time limit ran out; None while it runs.

        Read to the end of the stream, not to the exit status: sshd may send the status before
        the last of the output (it did under load, and 50 kB of 100 MB went missing)."""
        channel = self.channel
        assert channel is not None
        if now >= self.deadline:
            error, rc = f"time limit of {self.time_limit:.0f} s ran out", None
            if channel.exit_status_ready():
                rc = channel.recv_exit_status()
                error += f" after the command exited (rc {rc}): its output never ended"
            return self.result(rc, error)
        ended = channel.eof_received or channel.closed
        if (
            ended
            and channel.exit_status_ready()
            and not channel.recv_ready()
            and not channel.recv_stderr_ready()
        ):
            return self.result(channel.recv_exit_status(), "")
        return None

    def result(self, rc: int | None, error: str) -> RemoteResult:
        cut = "; ".join(n for n in (self.out.note("output"), self.err.note("stderr")) if n)
        return RemoteResult(
            self.target.name,
            self.out.getvalue(),
            self.err.getvalue(),
            rc,
            error,
            self.started,
            time.time(),
            cut=cut,
        )


def run_script(
    target: SshTarget, script: str, time_limit: float, max_output: int = STREAM_CAP
) -> RemoteResult:
    """Run ``script`` with ``bash -s`` on the node; give up (keeping the output so far) after
    ``time_limit`` seconds. Each stream keeps at most ``max_output`` bytes, its head and its tail
    (``RemoteResult.cut`` says what was cut), so a node that prints without end costs the
    controller a bounded amount."""
    opened = _open(target, script, time_limit, max_output)
    if isinstance(opened, RemoteResult):
        return opened
    stream = opened
    try:
        while True:
            select.select([stream.channel], [], [], max(0.0, min(stream.deadline - time.time(), 1.0)))
            stream.pump()
            done = stream.finished(time.time())
            if done is not None:
                return done
    except Exception as exc:  # noqa: BLE001 - a dropped connection keeps what arrived
        return stream.result(None, describe_error(exc, target))
    finally:
        stream.client.close()


# ---- many nodes: a few threads connect, one thread reads every open session -----------------

# Threads that open connections (TCP, key exchange, login, the script sent). A node that does not
# answer holds one for its connect timeout, so there are several; the reading needs only one.
CONNECTORS = 12


def fan_out(
    targets: Iterable[SshTarget],
    script: str | Callable[[SshTarget], str],
    time_limit: float,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> Iterator[RemoteResult]:
    """Run a script on many nodes at once (at most ``concurrency`` at a time), yielding each
    node's result as soon as it is in, so the caller can save it before the rest finish."""
    for batch in fan_out_batches(targets, script, time_limit, concurrency):
        yield from batch


def fan_out_batches(
    targets: Iterable[SshTarget],
    script: str | Callable[[SshTarget], str],
    time_limit: float,
    concurrency: int = DEFAULT_CONCURRENCY,
    gather_s: float = 0.0,
) -> Iterator[list[RemoteResult]]:
    """``fan_out``, yielding every result that is in at that moment (at least one), so a caller
    can save them together: while it writes, the next ones gather. With ``gather_s`` a batch
    also takes what comes within that many seconds of its first result (never past the last
    node): answers that trickle in one at a time are then saved a few at a time, not each in a
    transaction of its own. With 0 (the default) nothing waits for a batch to fill.

    Threads: at most ``concurrency`` SSH sessions are open (paramiko runs a thread for each),
    ``CONNECTORS`` threads open them and one thread reads them all, so the controller's thread
    count is bounded by the concurrency plus a constant, not by twice it. A session's slot is
    free again only when its paramiko thread has ended."""
    targets = list(targets)
    if not targets:
        return
    mux = _Multiplexer(targets, script, time_limit, max(1, concurrency))
    try:
        yield from mux.batches(gather_s)
    finally:
        # Interrupted (Ctrl-C, the caller failing): start no other node, and return at once so the
        # run's ending is recorded; the scripts already running end under their time limit.
        mux.stop()


def _open(
    target: SshTarget, script: str, time_limit: float, max_output: int = STREAM_CAP
) -> _Stream | RemoteResult:
    """Connect, start the script: the session to read, or the node's failed result."""
    started = time.time()
    try:
        client = connect(target)
    except Exception as exc:  # noqa: BLE001 - every failure is this node's result
        return RemoteResult(
            target.name, error=describe_error(exc, target), started_at=started, finished_at=time.time()
        )
    stream = _Stream(target, client, started, time_limit, max_output)
    try:
        stream.start(script)
    except Exception as exc:  # noqa: BLE001
        client.close()
        return stream.result(None, describe_error(exc, target))
    return stream


class _Multiplexer:
    def __init__(
        self,
        targets: list[SshTarget],
        script: str | Callable[[SshTarget], str],
        time_limit: float,
        concurrency: int,
    ) -> None:
        self.todo = list(reversed(targets))
        self.count = len(targets)
        self.script, self.time_limit = script, time_limit
        self.slots = threading.BoundedSemaphore(min(concurrency, len(targets)))
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.results: queue.SimpleQueue[RemoteResult | None] = queue.SimpleQueue()
        self.opened: queue.SimpleQueue[_Stream] = queue.SimpleQueue()
        self.failure: BaseException | None = None
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.pipe_closed = False
        self.connecting = min(CONNECTORS, concurrency, len(targets))
        # Daemons: a caller interrupted while busy with an answer (Ctrl-C while judging it) may never
        # close this generator before the process ends, and the process must not wait for a node's
        # connect timeout or time limit to end once the run's ending is recorded.
        threads = [
            threading.Thread(target=self._connector, name=f"ssh-connect-{i}", daemon=True)
            for i in range(self.connecting)
        ]
        threads.append(threading.Thread(target=self._reader, name="ssh-reader", daemon=True))
        for t in threads:
            t.start()

    def batches(self, gather_s: float = 0.0) -> Iterator[list[RemoteResult]]:
        received = 0
        while received < self.count:  # every target gives exactly one result
            batch = [self.results.get()]
            until = time.monotonic() + gather_s
            while received + len(batch) < self.count and batch[-1] is not None:
                try:
                    batch.append(self.results.get(timeout=max(0.0, until - time.monotonic())))
                except queue.Empty:
                    break
            if None in batch:
                raise RuntimeError(f"the SSH fan-out's reader failed: {self.failure!r}")
            received += len(batch)
            yield batch  # type: ignore[misc]

    def stop(self) -> None:
        self.stopping.set()
        self._wake()

    def _wake(self) -> None:
        # At interpreter exit (a generator closed as the process ends after Ctrl-C) the daemon
        # threads are frozen wherever they were, perhaps holding the lock: there is no one to wake,
        # and waiting for the lock hung the exit (1 run in 4 of the interrupt test).
        if sys.is_finalizing() or not self.lock.acquire(timeout=5):
            return
        try:  # never write to a closed (and perhaps reused) descriptor
            if not self.pipe_closed:
                with contextlib.suppress(BlockingIOError):  # full: the reader has plenty to wake it
                    os.write(self.wake_w, b"x")
        finally:
            self.lock.release()

    def _connector(self) -> None:
        try:
            while not self.stopping.is_set():
                with self.lock:
                    if not self.todo:  # nothing left to open: do not wait for a slot to say so
                        return
                if not self.slots.acquire(timeout=0.5):
                    continue
                with self.lock:
                    target = self.todo.pop() if self.todo and not self.stopping.is_set() else None
                if target is None:
                    self.slots.release()
                    return
                try:
                    script = self.script(target) if callable(self.script) else self.script
                    opened = _open(target, script, self.time_limit)
                except Exception as exc:  # noqa: BLE001 - a bad script for one node fails that node
                    opened = RemoteResult(target.name, error=f"could not start: {type(exc).__name__}: {exc}")
                if isinstance(opened, RemoteResult):
                    self.results.put(opened)
                    self.slots.release()
                else:
                    self.opened.put(opened)
                    self._wake()
        finally:
            with self.lock:
                self.connecting -= 1
            self._wake()

    def _reader(self) -> None:
        """Every open session in one selector; ends when none is open or coming.

        A session whose EOF is in but not its exit status keeps its pipe readable: it is looked
        at on a short timer instead of the selector, so it never spins the reader."""
        selector = selectors.DefaultSelector()
        selector.register(self.wake_r, selectors.EVENT_READ)
        streams: set[_Stream] = set()  # in the selector
        waiting: set[_Stream] = set()  # EOF in, exit status not yet
        closing: list[paramiko.Transport] = []  # a slot is free once its paramiko thread is gone
        next_sweep = 0.0
        try:
            while True:
                while not self.opened.empty():
                    stream = self.opened.get()
                    streams.add(stream)
                    selector.register(stream.channel, selectors.EVENT_READ, stream)  # type: ignore[arg-type]
                with self.lock:
                    idle = self.connecting == 0
                if idle and not streams and not waiting and self.opened.empty():
                    break
                now = time.time()
                if waiting or closing:
                    timeout = 0.02
                else:
                    timeout = min([s.deadline for s in streams], default=now + 1.0) - now
                ready = selector.select(max(0.0, min(timeout, 1.0)))
                now = time.time()
                touched = set(waiting)
                for key, _ in ready:
                    if key.data is None:
                        os.read(self.wake_r, 4096)
                    else:
                        touched.add(key.data)
                if now >= next_sweep:  # the time limits of quiet sessions
                    touched |= streams
                    next_sweep = now + 0.5
                for stream in touched:
                    try:
                        stream.pump()
                        done = stream.finished(now)
                    except Exception as exc:  # noqa: BLE001 - a dropped connection keeps what arrived
                        done = stream.result(None, describe_error(exc, stream.target))
                    if done is None and (stream in waiting or not stream.channel.eof_received):  # type: ignore[union-attr]
                        continue
                    if stream in streams:
                        selector.unregister(stream.channel)  # type: ignore[arg-type]
                        streams.discard(stream)
                    if done is None:
                        waiting.add(stream)
                        continue
                    waiting.discard(stream)
                    transport = stream.client.get_transport()
                    stream.client.close()
                    if transport is None:
                        self.slots.release()
                    else:
                        closing.append(transport)
                    self.results.put(done)
                for transport in [t for t in closing if not t.is_alive()]:
                    closing.remove(transport)
                    self.slots.release()
        except BaseException as exc:  # a bug here must not leave the caller waiting for ever
            self.failure = exc
            self.results.put(None)
        finally:
            selector.close()
            with self.lock:
                self.pipe_closed = True
                os.close(self.wake_r)
                os.close(self.wake_w)
