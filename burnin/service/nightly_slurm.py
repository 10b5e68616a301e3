"""The Slurm edge of the nightly: resume a node, set its drain reason, wait for its jobs to end.

Each call is one subprocess with a time limit (``burnin.service.slurm``'s runner). Only the
nightly resumes, and only nodes ``nightly_plan.return_action`` says it may.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from burnin.parsers.errors import ParseError
from burnin.parsers.slurm import SlurmNode, SlurmReservation, parse_scontrol_reservations
from burnin.service import slurm
from burnin.service.nightly_plan import is_busy


def resume(name: str, slurm_conf: str | None = None) -> None:
    slurm.run_slurm(["scontrol", "update", f"NodeName={name}", "State=RESUME"], slurm_conf, slurm.TIMEOUT_S)


def check_reservation(name: str, slurm_conf: str | None = None) -> SlurmReservation:
    """The reservation, or SlurmError when Slurm has none of that name (a mistyped name would
    have the night test nodes that jobs still land on) or it has not started yet."""
    try:
        text = slurm.run_slurm(["scontrol", "show", "reservation", "-o", name], slurm_conf, slurm.TIMEOUT_S)
    except slurm.SlurmError as exc:
        raise slurm.SlurmError(f"Slurm has no reservation {name!r} ({exc})") from exc
    try:
        found = [r for r in parse_scontrol_reservations(text) if r.name == name]
    except ParseError as exc:
        raise slurm.SlurmError(f"`scontrol show reservation -o {name}`: {exc}") from exc
    if not found:
        raise slurm.SlurmError(f"Slurm has no reservation {name!r} (scontrol printed {text.strip()[:200]!r})")
    if found[0].state != "ACTIVE":
        # Not started: nothing keeps jobs off its nodes yet, and the night drains nothing inside one.
        raise slurm.SlurmError(
            f"reservation {name!r} has not started (State={found[0].state}): run the night inside it"
        )
    return found[0]


def view(slurm_conf: str | None = None) -> dict[str, SlurmNode]:
    return {n.name: n for n in slurm.cluster_nodes(slurm_conf)}


def wait_idle(
    names: Sequence[str],
    slurm_conf: str | None,
    timeout_s: float,
    poll_s: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[str], list[str]]:
    """Wait until none of ``names`` runs a job, up to ``timeout_s``: (idle ones, still busy ones)."""
    deadline = clock() + timeout_s
    while True:
        now = view(slurm_conf)
        busy = [n for n in names if n in now and is_busy(now[n])]
        if not busy or clock() >= deadline:
            return [n for n in names if n not in busy], busy
        sleep(max(0.05, min(poll_s, deadline - clock())))
