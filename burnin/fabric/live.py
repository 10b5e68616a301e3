"""The I/O edge of ``burnin fabric verify``: the plan, the saved outputs or a live
``ibnetdiscover -p`` run on this machine, the P_Key tables, then the pure comparison
(burnin/fabric/verify.py). Every problem with an input is a ``PlanError`` naming the input.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bringup.local.capture import run_bounded
from burnin.fabric.pkeys import parse_pkey_tables
from burnin.fabric.plan import PlanError, load_plan
from burnin.fabric.verify import Verification, verify
from burnin.parsers import ParseError
from burnin.parsers._common import gc_paused
from burnin.parsers.ibnetdiscover import IbnetPort, parse_ibnetdiscover_ports

IBNETDISCOVER = ["ibnetdiscover", "-p"]
IBNETDISCOVER_TIME_LIMIT_S = 600.0
# A 4,000-node fabric prints about 17 MB (benchmarks/fabric.py): keep far more than the usual
# 16 MiB per stream, and refuse a cut output rather than report its far half as missing.
OUTPUT_CAP = 512 * 1024 * 1024


def live_fabric_text() -> str:
    """``ibnetdiscover -p`` run here (needs the InfiniBand diagnostics and access to umad)."""
    if shutil.which(IBNETDISCOVER[0]) is None:
        raise PlanError(
            "ibnetdiscover", None, None, "not installed here: give a saved output with --ibnetdiscover FILE"
        )
    got = run_bounded(IBNETDISCOVER, b"", IBNETDISCOVER_TIME_LIMIT_S, OUTPUT_CAP)
    if got.rc != 0 or got.stdout.dropped:
        why = (
            got.error
            or got.stdout.note()
            or (got.stderr.text().strip().splitlines() or [f"exit status {got.rc}"])[-1]
        )
        raise PlanError("ibnetdiscover -p", None, None, f"failed: {why[:200]}")
    return got.stdout.text()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise PlanError(str(path), None, None, f"cannot read: {exc.strerror}") from None


def fabric_ports(saved: list[Path]) -> list[IbnetPort]:
    """Every port line of the saved outputs (one per part of a split fabric), or of a live run."""
    texts = [(str(p), _read(p)) for p in saved] or [("ibnetdiscover -p", live_fabric_text())]
    ports: list[IbnetPort] = []
    for source, text in texts:
        try:
            with gc_paused():
                ports += parse_ibnetdiscover_ports(text)
        except ParseError as exc:
            raise PlanError(source, None, None, str(exc)) from None
    return ports


def verify_fabric(plan: Path, saved: list[Path], pkeys: Path | None) -> Verification:
    """``burnin fabric verify`` as one call."""
    the_plan = load_plan(plan)
    tables = parse_pkey_tables(_read(pkeys), str(pkeys)) if pkeys is not None else None
    return verify(the_plan, fabric_ports(saved), tables)
