"""SSH fan-out on paramiko: bounded concurrency, per-node time limits, partial results.

A script goes to ``bash -s`` on each node over one SSH connection; what came back (stdout,
stderr, exit code) is returned even when the node hit its time limit half-way, so the caller
keeps whatever finished. One node that cannot be reached is a result with ``error`` set, never
an exception that stops the others.

Targets come from the same inventory variables Ansible uses (ansible_host, ansible_user,
ansible_port, ansible_ssh_private_key_file, StrictHostKeyChecking in ansible_ssh_common_args).
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from bringup.capture import STREAM_CAP, HeadTail

DEFAULT_CONCURRENCY = 64


@dataclass(frozen=True)
class SshTarget:
    name: str  # the node's inventory name
    host: str
    user: str = "root"
    port: int = 22
    key_file: str | None = None
    host_key_policy: str = "accept-new"  # strict | accept-new | off
    connect_timeout: float = 15.0


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


def target_from_vars(
    name: str, hostvars: Mapping[str, Any], inventory_dir: Path, ip: str | None = None
) -> SshTarget:
    """An SshTarget from a host's inventory variables; ``ip`` (the fleet store's) wins."""
    key = hostvars.get("ansible_ssh_private_key_file") or hostvars.get("ansible_private_key_file")
    if key:
        key = str(key).replace("{{ inventory_dir }}", str(inventory_dir))
        key = str(Path(key).expanduser())
    common = (
        str(hostvars.get("ansible_ssh_common_args", ""))
        + " "
        + str(hostvars.get("ansible_ssh_extra_args", ""))
    )
    policy = "off" if "StrictHostKeyChecking=no" in common.replace(" ", "") else "accept-new"
    if "StrictHostKeyChecking=yes" in common.replace(" ", ""):
        policy = "strict"
    return SshTarget(
        name=name,
        host=ip or str(hostvars.get("ansible_host") or name),
        user=str(hostvars.get("ansible_user") or "root"),
        port=int(hostvars.get("ansible_port") or 22),
        key_file=key,
        host_key_policy=policy,
    )


def _connect(target: SshTarget) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    if target.host_key_policy != "off":
        client.load_system_host_keys()
    # accept-new: an unknown host is accepted (fresh nodes are unknown); a known host whose key
    # changed still raises BadHostKeyException. off: not even that (lab nodes, re-imaged racks).
    policy = paramiko.RejectPolicy() if target.host_key_policy == "strict" else paramiko.AutoAddPolicy()
    client.set_missing_host_key_policy(policy)
    client.connect(
        target.host,
        port=target.port,
        username=target.user,
        key_filename=target.key_file,
        timeout=target.connect_timeout,
        banner_timeout=target.connect_timeout,
        auth_timeout=target.connect_timeout,
        look_for_keys=target.key_file is None,
        allow_agent=target.key_file is None,
    )
    return client


def describe_error(exc: BaseException, target: SshTarget) -> str:
    """One line saying what went wrong, for the node's record (no secrets in paramiko's errors)."""
    where = f"{target.user}@{target.host}:{target.port}"
    if isinstance(exc, paramiko.AuthenticationException):
        return f"SSH authentication failed for {where}"
    if isinstance(exc, paramiko.BadHostKeyException):
        return f"SSH host key of {where} changed (re-imaged? remove it from known_hosts if expected)"
    if isinstance(exc, paramiko.SSHException) and "not found in known_hosts" in str(exc):
        return f"SSH host key of {where} is unknown and host key checking is strict"
    if isinstance(exc, socket.timeout | TimeoutError):
        return f"unreachable: SSH to {where} timed out"
    if isinstance(exc, OSError):
        return f"unreachable: SSH to {where}: {exc.strerror or exc}"
    return f"SSH to {where} failed: {type(exc).__name__}: {exc}"


def run_script(
    target: SshTarget, script: str, time_limit: float, max_output: int = STREAM_CAP
) -> RemoteResult:
    """Run ``script`` with ``bash -s`` on the node; give up (keeping the output so far) after
    ``time_limit`` seconds. Each stream keeps at most ``max_output`` bytes, its head and its tail
    (``RemoteResult.cut`` says what was cut), so a node that prints without end costs the
    controller a bounded amount."""
    started = time.time()
    out, err = HeadTail(max_output), HeadTail(max_output)
    try:
        client = _connect(target)
    except Exception as exc:  # noqa: BLE001 - every failure is this node's result
        return RemoteResult(
            target.name, error=describe_error(exc, target), started_at=started, finished_at=time.time()
        )

    def result(rc: int | None, error: str) -> RemoteResult:
        cut = "; ".join(n for n in (out.note("output"), err.note("stderr")) if n)
        return RemoteResult(
            target.name, out.getvalue(), err.getvalue(), rc, error, started, time.time(), cut=cut
        )

    try:
        channel = client.get_transport().open_session()  # type: ignore[union-attr]
        channel.exec_command("bash -s")
        channel.sendall(script.encode())
        channel.shutdown_write()
        deadline = started + time_limit
        rc: int | None = None
        error = ""
        while True:
            left = deadline - time.time()
            if left <= 0:
                error = f"time limit of {time_limit:.0f} s ran out"
                break
            select.select([channel], [], [], min(left, 1.0))
            while channel.recv_ready():
                out.write(channel.recv(65536))
            while channel.recv_stderr_ready():
                err.write(channel.recv_stderr(65536))
            if channel.exit_status_ready() and not channel.recv_ready() and not channel.recv_stderr_ready():
                rc = channel.recv_exit_status()
                break
        return result(rc, error)
    except Exception as exc:  # noqa: BLE001 - a dropped connection keeps what arrived
        return result(None, describe_error(exc, target))
    finally:
        client.close()


def fan_out(
    targets: Iterable[SshTarget],
    script: str | Callable[[SshTarget], str],
    time_limit: float,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> Iterator[RemoteResult]:
    """Run a script on many nodes at once (at most ``concurrency`` at a time), yielding each
    node's result as soon as it is in, so the caller can save it before the rest finish."""
    targets = list(targets)
    if not targets:
        return
    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(targets)))) as pool:
        futures = [
            pool.submit(run_script, t, script(t) if callable(script) else script, time_limit) for t in targets
        ]
        for future in as_completed(futures):
            yield future.result()
