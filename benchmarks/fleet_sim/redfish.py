#!/usr/bin/env python3
"""N simulated Redfish BMCs in one process, each on its own loopback port, for controller benchmarks.

Usage: .venv/bin/python -m benchmarks.fleet_sim.redfish --count 1024 [--fixture dell-idrac9]
       [--latency 0.2] [--password PW] [--tls DIR]

The BMCs are tests/doubles/redfish_server.py's vendor-shaped fakes (a fixture's tree, every
BMC its own serial numbers, sessions, ``$expand``/``$select`` as the fixture advertises), served
by one asyncio loop: 1,024 listeners and their connections cost file descriptors, not threads.
Every answer waits ``--latency`` seconds (a real BMC takes 50-500 ms per request). GETs are
served from a cache of serialized answers, so the process keeps up with thousands of requests
per second on one core and what a benchmark measures is the client.

Protocol on stdin/stdout (one JSON line each way): at start it prints ``{"urls": [...],
"ca": PATH|null}``; then each line ``stats`` is answered with the totals since the last
``reset`` (``requests``, ``logins``, ``open_sessions``, ``connections``, ``basic_auth``,
``by_kind``: requests per resource kind) and ``server_cpu``, the process's own CPU seconds (a
benchmark can tell when the fleet, not the client, is the limit); ``reset`` zeroes the totals;
``no-expand`` takes ``ExpandQuery`` out of every service root. It serves until stdin closes.

``RedfishFleet`` starts it as a child process (the client under test must not share a GIL
with the BMCs) and speaks that protocol.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.doubles.redfish_server import FakeBmc, FakeBmcServer, load_fixture, self_signed_tls  # noqa: E402


def _kind(path: str) -> str:
    """A request's resource kind for the counts: the path's two levels under /redfish/v1."""
    parts = path.split("/")
    return "/".join(parts[3:5]) if len(parts) > 4 else "/".join(parts[3:]) or "(root)"


def build(count: int, fixture: str, latency: float, password: str) -> list[FakeBmc]:
    resources, fake = load_fixture(fixture)
    bmcs = []
    for i in range(count):
        tree = copy.deepcopy(resources)
        for doc in tree.values():  # every BMC its own serial, as in a real rack
            if isinstance(doc, dict) and isinstance(doc.get("SerialNumber"), str) and doc["SerialNumber"]:
                doc["SerialNumber"] = f"{doc['SerialNumber']}{i:04d}"
        bmc = FakeBmc(tree, **{**fake, "latency": latency, "password": password})
        bmc.cache_gets = True
        bmcs.append(bmc)
    return bmcs


def stats(bmcs: list[FakeBmc]) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for bmc in bmcs:
        for r in bmc.requests:
            kinds[_kind(r.path)] = kinds.get(_kind(r.path), 0) + 1
    return {
        "requests": sum(len(b.requests) for b in bmcs),
        "logins": sum(b.logins for b in bmcs),
        "open_sessions": sum(len(b.tokens) for b in bmcs),
        "connections": sum(b.connections for b in bmcs),
        "basic_auth": sum(r.auth == "basic" for b in bmcs for r in b.requests),
        "server_cpu": time.process_time(),  # this process's CPU seconds so far: is the sim the limit?
        "by_kind": dict(sorted(kinds.items())),
    }


def no_expand(bmcs: list[FakeBmc]) -> None:
    """Take ExpandQuery out of every service root: what discovery costs where $expand is not offered."""
    for bmc in bmcs:
        (bmc.resources["/redfish/v1"].get("ProtocolFeaturesSupported") or {}).pop("ExpandQuery", None)
        bmc._cache.clear()


def reset(bmcs: list[FakeBmc]) -> None:
    for bmc in bmcs:
        bmc.requests.clear()
        bmc.logins = bmc.connections = 0


class RedfishFleet:
    """The simulated fleet as a child process: ``with RedfishFleet(1024) as fleet: fleet.urls``."""

    def __init__(
        self,
        count: int,
        *,
        fixture: str = "dell-idrac9",
        latency: float = 0.2,
        password: str = "fleet-pw",
        tls_dir: Path | None = None,
    ):
        self.count, self.fixture, self.latency, self.password = count, fixture, latency, password
        self.tls_dir = tls_dir
        self.urls: list[str] = []
        self.ca: str | None = None
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> RedfishFleet:
        cmd = [sys.executable, "-m", "benchmarks.fleet_sim.redfish", "--count", str(self.count)]
        cmd += ["--fixture", self.fixture, "--latency", str(self.latency), "--password", self.password]
        if self.tls_dir is not None:
            cmd += ["--tls", str(self.tls_dir)]
        self._proc = subprocess.Popen(cmd, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self._line()
        self.urls, self.ca = first["urls"], first["ca"]
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()

    def _line(self) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self._proc.kill()
            raise RuntimeError("the simulated Redfish fleet did not answer (see its stderr)")
        return json.loads(line)

    def _ask(self, word: str) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(word + "\n")
        self._proc.stdin.flush()
        return self._line()

    def stats(self) -> dict[str, Any]:
        return self._ask("stats")

    def reset(self) -> None:
        self._ask("reset")

    def set_expand(self, offered: bool) -> None:
        """``False``: every BMC's service root stops advertising ``$expand``."""
        if not offered:
            self._ask("no-expand")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--fixture", default="dell-idrac9")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds added to every answer")
    parser.add_argument("--password", default="fleet-pw")
    parser.add_argument("--tls", type=Path, default=None, help="serve HTTPS; the CA is written to DIR")
    args = parser.parse_args(argv)
    bmcs = build(args.count, args.fixture, args.latency, args.password)
    ca, context = (None, None)
    if args.tls is not None:
        args.tls.mkdir(parents=True, exist_ok=True)
        cert, context = self_signed_tls(args.tls)
        ca = str(cert)
    with FakeBmcServer(bmcs, tls=context) as server:
        print(json.dumps({"urls": [b.url for b in bmcs], "ca": ca}), flush=True)
        for line in sys.stdin:  # until the parent closes our stdin
            word = line.strip()
            # The counters belong to the server's loop thread: read and zero them there.
            if word == "stats":
                got = asyncio.run_coroutine_threadsafe(_call(stats, bmcs), server.loop).result(60)
                print(json.dumps(got), flush=True)
            elif word in ("reset", "no-expand"):
                fn = reset if word == "reset" else no_expand
                asyncio.run_coroutine_threadsafe(_call(fn, bmcs), server.loop).result(60)
                print("{}", flush=True)
    return 0


async def _call(fn: Any, bmcs: list[FakeBmc]) -> Any:
    return fn(bmcs)


if __name__ == "__main__":
    sys.exit(main())
