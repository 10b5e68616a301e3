#!/usr/bin/env python3
"""N simulated SSH nodes in one process (asyncssh), answering the burn-in stages' batch scripts.

Usage: .venv/bin/python -m benchmarks.fleet_sim.ssh --nodes 1000 --state DIR [--latency 0.2]
       [--base-port 20000] [--host 127.0.0.1]

Each node is its own listening port on one address (``--base-port`` + i): the controller sees
N endpoints, each with its own host:port and pinned host key entry, as it would see N machines,
and one event loop serves them all (asyncssh; 4,000 listeners cost file descriptors, not
threads). A per-username identity on one port would save the descriptors but would hand every
node the same host:port, which the controller's host-key pinning and its per-target bookkeeping
never see in a real fleet.

A node takes ``bash -s`` and the batch script on its standard input (burnin.stages.batch's
``build_script``: heredoc per job, ``b_run KEY TIMEOUT`` lines, a frame token), waits
``--latency`` seconds (the time a node takes to run the stage), and answers with one frame per
job in the format ``parse_output`` reads. What a job prints is recorded, not run per node: the
first time the sim sees a job's script it runs it once under bash with the lab's stand-in tools
first on PATH (bringup/lab/standins: the recorded outputs of tests/fixtures/samples, a healthy
8x H100 node), and every node gets that answer. The clock job (``date -u +%s.%N``) is answered
with the sim's clock at answer time, so the clock check compares live times. A script that is
not a batch gets exit status 127 and says so on stderr (the checks judge that UNKNOWN).

When every endpoint listens it writes ``DIR/ready.json``: the endpoints, the host key line to
pin and the client key (``DIR/id_ed25519``) the controller logs in with. It serves until
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from bringup.lab.standins.dispatch import for_node as _for_node

REPO = Path(__file__).resolve().parents[2]
STANDINS = REPO / "bringup" / "lab" / "standins"
CLOCK_JOB = "date -u +%s.%N"
RUN_ONCE_TIMEOUT_S = 120

_TOKEN = re.compile(r"@@burnin-frame ([0-9a-f]+) %s")
_CAP = re.compile(r"head -c (\d+) .* tail -c (\d+) ")  # the head and the tail kept: the cap
_HEREDOC = re.compile(r"^cat >\"\$b_dir/([A-Za-z0-9_.-]+)\.sh\" <<'([A-Za-z0-9_]+)'$")
_RUN = re.compile(r"^b_run ([A-Za-z0-9_.-]+) (\d+)$")


# ---- pure: the batch script in, the framed answer out ------------------------------------------


@dataclass(frozen=True)
class Batch:
    token: str
    cap: int
    jobs: dict[str, str]  # key -> its script
    order: list[str]  # keys in the order the script runs them


def parse_batch(script: str) -> Batch | None:
    """The jobs of a batch script built by burnin.stages.batch.build_script; None if it is not one."""
    token, cap = _TOKEN.search(script), _CAP.search(script)
    if token is None or cap is None:
        return None
    jobs: dict[str, str] = {}
    order: list[str] = []
    lines = script.split("\n")
    i = 0
    while i < len(lines):
        heredoc, run = _HEREDOC.match(lines[i]), _RUN.match(lines[i])
        if heredoc:
            key, delimiter = heredoc.groups()
            end = lines.index(delimiter, i + 1)
            jobs[key] = "\n".join(lines[i + 1 : end])
            i = end
        elif run:
            order.append(run.group(1))
        i += 1
    if not order or any(k not in jobs for k in order):
        return None
    return Batch(token.group(1), int(cap.group(1)) + int(cap.group(2)), jobs, order)


def _capped(data: bytes, cap: int) -> bytes:
    return data if len(data) <= cap else data[: cap // 2] + data[len(data) - (cap - cap // 2) :]


def frame_answer(batch: Batch, outputs: dict[str, tuple[bytes, bytes, int]]) -> bytes:
    """The bytes a node running ``batch`` prints: one frame per job, as b_run writes them."""
    parts = []
    for key in batch.order:
        out, err, rc = outputs[key]
        sent_out, sent_err = _capped(out, batch.cap), _capped(err, batch.cap)
        head = (
            f"@@burnin-frame {batch.token} {key} rc={rc} out={len(sent_out)} err={len(sent_err)} "
            f"full={len(out)},{len(err)}\n"
        )
        parts += [head.encode(), sent_out, sent_err]
    return b"".join(parts)


_GPU_UUID = re.compile(rb"GPU-[0-9a-f]{8}")


def personalise(answer: tuple[bytes, bytes, int], node: int) -> tuple[bytes, bytes, int]:
    """The recorded answer as node ``node`` prints it: its own InfiniBand GUIDs (the lab's rule,
    dispatch.for_node) and GPU UUIDs. No two real nodes print the same text, so a controller's
    cache keyed on a tool's output must not hit across nodes here either."""
    out, err, rc = answer
    out = _for_node(out, node + 1)
    out = _GPU_UUID.sub(lambda m: b"GPU-%08x" % (int(m.group(0)[4:], 16) ^ node), out)
    return out, err, rc


# ---- recorded answers ---------------------------------------------------------------------------


class Recordings:
    """What a healthy node prints for a job script: run once under the lab's stand-ins, then kept."""

    def __init__(self, state: Path) -> None:
        root = state / "root"  # the stand-ins' node root: no faults file, a healthy node
        lib = root / "usr" / "local" / "lib" / "bringup-standins"
        if not lib.exists():
            lib.mkdir(parents=True)
            for name in ("dispatch.py", "catalog.json"):
                shutil.copy(STANDINS / name, lib / name)
            shutil.copytree(STANDINS / "samples", lib / "samples")
            (lib / "dispatch.py").chmod(0o755)
        self.bin = state / "bin"
        self.bin.mkdir(exist_ok=True)
        catalog = json.loads((lib / "catalog.json").read_text())
        for tool in catalog["tools"]:
            link = self.bin / tool
            if not link.exists():
                link.symlink_to(lib / "dispatch.py")
        self.cwd = state / "work"
        self.cwd.mkdir(exist_ok=True)
        self._known: dict[str, asyncio.Future[tuple[bytes, bytes, int]]] = {}

    async def answer(self, script: str) -> tuple[bytes, bytes, int]:
        if script.strip() == CLOCK_JOB:
            return f"{time.time():.9f}\n".encode(), b"", 0
        known = self._known.get(script)
        if known is None:
            known = self._known[script] = asyncio.ensure_future(self._run_once(script))
        return await known

    async def _run_once(self, script: str) -> tuple[bytes, bytes, int]:
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "LC_ALL": "C", "HOME": str(self.cwd)}
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            script,
            cwd=self.cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), RUN_ONCE_TIMEOUT_S)
        except asyncio.TimeoutError:
            proc.kill()
            out, err = await proc.communicate()
            return out, err + b"fleet-sim: the recording run timed out\n", 124
        return out, err, proc.returncode or 0


# ---- the SSH side --------------------------------------------------------------------------------


class _NodeServer(asyncssh.SSHServer):
    """Public-key login with the one client key the sim made; nothing else."""

    def __init__(self, client_key: asyncssh.SSHKey) -> None:
        self._client_key = client_key

    def begin_auth(self, username: str) -> bool:
        return True

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return key.public_data == self._client_key.public_data


@dataclass
class SimFleet:
    nodes: int
    state: Path
    latency: float = 0.0
    host: str = "127.0.0.1"
    base_port: int = 20000

    async def serve(self, stop: asyncio.Event) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        host_key = asyncssh.generate_private_key("ssh-ed25519")
        client_key = asyncssh.generate_private_key("ssh-ed25519")
        key_file = self.state / "id_ed25519"
        client_key.write_private_key(str(key_file))
        key_file.chmod(0o600)
        recordings = Recordings(self.state)
        self.answered = 0
        index_of: dict[int, int] = {}  # listening port -> node number

        async def handle(process: asyncssh.SSHServerProcess) -> None:
            if process.command != "bash -s":
                process.stderr.write(b"fleet-sim: only 'bash -s' is served\n")
                process.exit(127)
                return
            script = (await process.stdin.read()).decode("utf-8", "replace")
            batch = parse_batch(script)
            await asyncio.sleep(self.latency)
            if batch is None:
                process.stderr.write(b"fleet-sim: not a burn-in batch script; nothing recorded for it\n")
                process.exit(127)
                return
            node = index_of[process.get_extra_info("sockname")[1]]
            outputs = {k: personalise(await recordings.answer(batch.jobs[k]), node) for k in batch.order}
            process.stdout.write(frame_answer(batch, outputs))
            self.answered += 1
            process.exit(0)

        options = asyncssh.SSHServerConnectionOptions(
            server_host_keys=[host_key], process_factory=handle, encoding=None
        )
        listeners = []
        for i in range(self.nodes):
            listeners.append(
                await asyncssh.create_server(
                    lambda: _NodeServer(client_key),
                    self.host,
                    self.base_port + i if self.base_port else 0,
                    options=options,
                )
            )
        ports = [listener.sockets[0].getsockname()[1] for listener in listeners]  # --base-port 0: any
        index_of.update({port: i for i, port in enumerate(ports)})
        ready = {
            "host": self.host,
            "ports": ports,
            "host_key": host_key.export_public_key("openssh").decode().split()[0:2],
            "client_key": str(key_file),
            "latency": self.latency,
            "pid": os.getpid(),
        }
        ready["host_key"] = " ".join(ready["host_key"])
        (self.state / "ready.json").write_text(json.dumps(ready))
        await stop.wait()
        for listener in listeners:
            listener.close()


def _raise_fd_limit(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(needed, soft)), hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        raise SystemExit(f"fleet-sim: needs {needed} file descriptors, the limit is {soft} (ulimit -n)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--state", type=Path, required=True, help="where ready.json and the keys go")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds a node takes to answer")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--base-port", type=int, default=20000, help="node i listens on it + i (0: any free ports)"
    )
    args = parser.parse_args(argv)
    # A listener per node, and a connection (plus the stand-in runs) per node being served.
    _raise_fd_limit(2 * args.nodes + 1024)
    fleet = SimFleet(args.nodes, args.state, args.latency, args.host, args.base_port)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await fleet.serve(stop)

    asyncio.run(run())
    print(f"fleet-sim: answered {fleet.answered} batch(es)", file=sys.stderr)


if __name__ == "__main__":
    main()
