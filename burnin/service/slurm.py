"""The Slurm edge of the in-service loop: read nodes (`sinfo`, `scontrol show node -o`) and drain
one (`scontrol update NodeName=... State=DRAIN Reason=...`). Never a resume.

Each call is one subprocess with a time limit; what it printed is parsed by
``burnin.parsers.slurm``. ``slurm_conf`` (the rack's inventory var, as the launcher uses it) picks
the cluster; without it Slurm's own default applies (/etc/slurm/slurm.conf or configless).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from datetime import datetime, timezone
from typing import TypeVar

from bringup.core.errors import UserError
from burnin.parsers import ParseError
from burnin.parsers.sacct import (
    EVENT_FIELDS,
    SACCT_FIELDS,
    NodeEvent,
    SacctJob,
    parse_node_events,
    parse_sacct,
)
from burnin.parsers.slurm import SINFO_FORMAT, SlurmNode, parse_scontrol_nodes, parse_sinfo_nodes

TIMEOUT_S = 10.0  # slurmctld answers in milliseconds; MessageTimeout defaults to 10 s


class SlurmError(UserError, RuntimeError):
    """A Slurm command could not run, failed, or printed what it never prints."""


def run_slurm(argv: list[str], slurm_conf: str | None, timeout_s: float) -> str:
    """Run a Slurm client command (with `SLURM_CONF` when given); its stdout, or SlurmError."""
    env = dict(os.environ)
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError as exc:
        raise SlurmError(f"`{argv[0]}` is not installed here (the Slurm client tools are needed)") from exc
    except subprocess.TimeoutExpired as exc:
        raise SlurmError(f"`{' '.join(argv[:3])}` did not answer in {timeout_s:g} s") from exc
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise SlurmError(
            f"`{' '.join(argv[:3])}` exited {proc.returncode}: {lines[-1] if lines else 'no output'}"
        )
    return proc.stdout


def show_node(name: str, slurm_conf: str | None = None, timeout_s: float = TIMEOUT_S) -> SlurmNode:
    """The node as slurmctld sees it now."""
    try:
        text = run_slurm(["scontrol", "show", "node", "-o", name], slurm_conf, timeout_s)
    except SlurmError as exc:
        if "not found" in str(exc):
            raise SlurmError(f"Slurm has no node {name!r} (scontrol show node: not found)") from exc
        raise
    try:
        nodes = [n for n in parse_scontrol_nodes(text) if n.name == name]
    except ParseError as exc:
        raise SlurmError(f"scontrol show node {name}: {exc}") from exc
    if not nodes:
        raise SlurmError(f"Slurm has no node {name!r}")
    return nodes[0]


def drain(name: str, reason: str, slurm_conf: str | None = None, timeout_s: float = TIMEOUT_S) -> None:
    """Drain the node with this reason (one argv word: no shell quoting involved)."""
    run_slurm(
        ["scontrol", "update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}"], slurm_conf, timeout_s
    )


def partition_of(name: str, slurm_conf: str | None = None, timeout_s: float = TIMEOUT_S) -> tuple[str, int]:
    """The node's partition (the first Slurm lists it in) and how many nodes that partition has,
    from one `sinfo -N -h -o '%N|%R'` (a line per node and partition)."""
    text = run_slurm(["sinfo", "-N", "-h", "-o", "%N|%R"], slurm_conf, timeout_s)
    members: dict[str, set[str]] = {}
    mine: list[str] = []
    for line in text.splitlines():
        node, sep, partition = line.strip().partition("|")
        if not sep or not node or not partition:
            continue
        members.setdefault(partition, set()).add(node)
        if node == name:
            mine.append(partition)
    if not mine:
        raise SlurmError(f"sinfo lists node {name!r} in no partition")
    return mine[0], len(members[mine[0]])


def cluster_nodes(slurm_conf: str | None = None, timeout_s: float = TIMEOUT_S) -> list[SlurmNode]:
    """Every node of the cluster: state, drain, reason, who set it and when (one `sinfo` call)."""
    text = run_slurm(["sinfo", "-N", "-h", "-o", SINFO_FORMAT], slurm_conf, timeout_s)
    try:
        return parse_sinfo_nodes(text)
    except ParseError as exc:
        raise SlurmError(f"sinfo -N -o '{SINFO_FORMAT}': {exc}") from exc


_Record = TypeVar("_Record", SacctJob, NodeEvent)
ACCOUNTING_TIMEOUT_S = 60.0  # slurmdbd reads a window of job records from its database


def accounting(
    start: datetime, end: datetime, slurm_conf: str | None = None, timeout_s: float = ACCOUNTING_TIMEOUT_S
) -> tuple[list[SacctJob], list[NodeEvent]]:
    """Slurm accounting over [start, end] (the controller's clock): every run of every job
    (`sacct --allusers --duplicates --allocations`) and the node down/drain events
    (`sacctmgr list event`), both ``--parsable2`` with their header. Needs slurmdbd.
    Slurm's clients print and read times in this machine's local time: converted to UTC here."""
    start, end = start.astimezone(), end.astimezone()  # local, as sacct -S/-E read them
    window = [f"--starttime={start:%Y-%m-%dT%H:%M:%S}", f"--endtime={end:%Y-%m-%dT%H:%M:%S}"]
    jobs_text = run_slurm(
        ["sacct", "--allusers", "--duplicates", "--allocations", "--parsable2",
         f"--format={','.join(SACCT_FIELDS)}", *window],
        slurm_conf, timeout_s,
    )  # fmt: skip
    events_text = run_slurm(
        ["sacctmgr", "--parsable2", "list", "event", "Event=Node", f"Start={start:%Y-%m-%dT%H:%M:%S}",
         f"End={end:%Y-%m-%dT%H:%M:%S}", f"format={','.join(EVENT_FIELDS)}"],
        slurm_conf, timeout_s,
    )  # fmt: skip
    try:
        jobs, events = parse_sacct(jobs_text), parse_node_events(events_text)
    except ParseError as exc:
        raise SlurmError(f"Slurm accounting: {exc}") from exc
    return [_utc(j, "submit", "start", "end") for j in jobs], [_utc(e, "start", "end") for e in events]


def _utc(record: _Record, *names: str) -> _Record:
    """The record with its naive local times (as Slurm prints them) made UTC-aware."""
    times = {n: getattr(record, n) for n in names if getattr(record, n) is not None}
    return dataclasses.replace(record, **{n: t.astimezone(timezone.utc) for n, t in times.items()})
