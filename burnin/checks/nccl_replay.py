"""The nccl stage's record for `burnin rejudge` (pure): the whole output of every soak run of a
node's group, kept in its evidence so the group can be judged again later.

The stage appends one line of JSON, after a ``RECORD_MARK`` line, to each node's evidence: its
soak group, whether that soak failed (and was localised by trials), and for each soak run its
nodes, its whole output (stdout and stderr, as judged), exit status, time, what was cut of it
and the watchdog's hang. ``replay`` judges the group's soak again, per group, against the
profile given (burnin.checks.nccl: each run against the floor for its node count, then the
soak). A rejudge runs no trial: a group whose soak fails now fails each of its nodes with the
group's findings (which node is to blame is what trials would tell), and a group whose soak had
failed, and was localised by trials, cannot be judged again (its soak stopped at the failure).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from bringup.profiles.load import Profile
from burnin.checks import replay_record
from burnin.checks.cut import told_of_cut
from burnin.checks.nccl import SOAK_CHECK, Hang, busbw_floor, judge_output, judge_soak
from burnin.parsers import ParseError
from burnin.result import PASSING, Result, Verdict, info

RECORD_MARK = "@@burnin-nccl-record v1"


def soak_run(
    nodes: Sequence[str],
    text: str,
    *,
    rc: int | None,
    seconds: float | None,
    cut: str,
    hang: Hang | None,
    counted: bool,
) -> dict[str, Any]:
    """One soak run as the record keeps it: what ``judge_output`` was given."""
    return {
        "nodes": list(nodes),
        "text": text,
        "rc": rc,
        "seconds": seconds,
        "cut": cut,
        "hang": None
        if hang is None
        else {
            "timeout_s": hang.timeout_s,
            "silent_hosts": list(hang.silent_hosts),
            "last_output": hang.last_output,
        },
        "counted": counted,
    }


def record_text(
    group: Iterable[str], soak_failed: bool, runs: Iterable[dict[str, Any]], per_iteration: int = 1
) -> str:
    """``per_iteration``: the runs of one soak iteration (one per test of ``diag.nccl_tests``)."""
    doc = {
        "group": list(group),
        "soak_failed": soak_failed,
        "soak": list(runs),
        "per_iteration": per_iteration,
    }
    return replay_record.record_text(RECORD_MARK, doc)


def parse_record(evidence: str) -> dict[str, Any]:
    """The record in a node's ``nccl_soak`` evidence; ParseError when it holds none or it was cut."""
    return replay_record.parse_record(
        evidence,
        RECORD_MARK,
        "no nccl record in the evidence (the stage keeps one for each node of a soak group)",
        {"group": object, "soak": list},
    )


def _judge_run(run: dict[str, Any], profile: Profile) -> Result:
    hang = run.get("hang")
    result = judge_output(
        run["text"],
        busbw_floor(profile, len(run["nodes"])),
        hang=Hang(hang["timeout_s"], tuple(hang["silent_hosts"]), hang.get("last_output", ""))
        if hang
        else None,
        rc=run.get("rc"),
        seconds=run.get("seconds"),
    )
    return told_of_cut(result, run["cut"]) if run.get("cut") else result


def replay(doc: dict[str, Any], profile: Profile) -> Result:
    """A node's ``nccl_soak`` judged again from its group's record; ParseError when the group
    was localised (see the module docstring)."""
    if doc.get("soak_failed"):
        raise ParseError(
            "its group's soak failed and the stage localised it with trials; a rejudge runs no trial"
        )
    per = doc.get("per_iteration")  # records made before it was kept: one test per iteration
    soak = judge_soak(
        [_judge_run(r, profile) for r in doc["soak"] if r.get("counted", True)],
        per_iteration=per if isinstance(per, int) and per > 0 else 1,
        steady_fraction=profile.floors.nccl_busbw_steady_fraction,
    )
    if soak.verdict in PASSING or soak.verdict is Verdict.UNKNOWN:
        return soak
    note = info(
        f"judged again per group ({', '.join(doc['group'])}): the group's soak fails; trials would tell "
        "which node is to blame, and a rejudge runs none"
    )
    return Result(SOAK_CHECK, soak.verdict, soak.metrics, (*soak.findings, note), soak.reason)
