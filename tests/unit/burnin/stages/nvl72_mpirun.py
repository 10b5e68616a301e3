"""A fake `mpirun` for the NVL72 nccl stage tests: nccl-tests output over the hostfile's hosts.

A run moves 390 GB/s with multi-node NVLink off. With it on (``NCCL_MNNVL_ENABLE=1``) it moves
what its slowest tray moves: ``FAKE_ON`` (JSON, tray -> GB/s), else ``FAKE_MNNVL_BUSBW``, else 390.
A run is slow (40 GB/s) when it holds a tray of ``FAKE_SLOW_RACK`` (JSON list; NVLink on only) or
``FAKE_SLOW_TRAY`` (NVLink on, or either way with ``FAKE_TRAY_BOTH``). ``FAKE_NAMES`` maps each
address to its tray; every launch is logged to ``FAKE_LOG`` as ``on|off TRAY ...``; the GPUs are
named ``FAKE_MODEL`` (default GB200).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

FAKE_MPIRUN = r"""
import json, os, sys
args = sys.argv[1:]
hosts = [l.split()[0] for l in open(args[args.index("--hostfile") + 1]) if l.strip()]
names = json.loads(os.environ["FAKE_NAMES"])
mnnvl = "NCCL_MNNVL_ENABLE=1" in args
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(("on " if mnnvl else "off ") + " ".join(names[h] for h in hosts) + "\n")
members = {names[h] for h in hosts}
rack = set(json.loads(os.environ.get("FAKE_SLOW_RACK") or "[]"))
tray = os.environ.get("FAKE_SLOW_TRAY", "")
slow = (mnnvl and members & rack) or (tray in members and (mnnvl or os.environ.get("FAKE_TRAY_BOTH")))
on = json.loads(os.environ.get("FAKE_ON") or "{}")
usual = float(os.environ.get("FAKE_MNNVL_BUSBW") or 390)
busbw = 40.0 if slow else min(on.get(m, usual) for m in members) if mnnvl else 390.0
model = os.environ.get("FAKE_MODEL") or "GB200"
p = lambda s="": print(s, flush=True)
p("# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 "
  "agg iters: 1 validation: 1 graph: 0")
p("#")
p("# Using devices")
for rank, h in enumerate(hosts):
    p("#  Rank %2d Group  0 Pid %6d on %10s device  0 [0000:01:00] NVIDIA %s" % (rank, 1000 + rank, names[h], model))
p("#")
p("#       size         count      type   redop    root     time   algbw   busbw #wrong"
  "     time   algbw   busbw #wrong")
for size in (1073741824, 2147483648):
    p("%12d  %12d  %8s  %6s  %6d  %7.0f  %6.2f  %6.2f  %5d  %7.0f  %6.2f  %6.2f  %5d"
      % (size, size // 4, "float", "sum", -1, 9000.0, busbw / 1.9, busbw, 0, 9000.0, busbw / 1.9, busbw, 0))
p("# Out of bounds values : 0 OK")
p("# Avg bus bandwidth    : %g " % busbw)
p("#")
"""


def write_fake_mpirun(directory: Path) -> Path:
    """The fake `mpirun`, executable, in ``directory``."""
    script = directory / "mpirun"
    script.write_text(f"#!{sys.executable}\n{textwrap.dedent(FAKE_MPIRUN)}")
    script.chmod(0o755)
    return script
