"""All checks of a stage on one node in one round trip (DESIGN.md, idea 7).

``build_script`` turns a stage's commands into one bash script; run on the node (over SSH or
locally) it runs them one after the other, each under ``timeout``, and prints every command's
stdout and stderr framed by byte counts, so no output can be mistaken for a frame (binary,
missing final newline, a stray marker). ``parse_output`` turns the node's answer back into
one CommandOutput per command. Both are pure.

Commands that are the same string run once and are shared: several checks read `nvidia-smi -q`.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from burnin.checks.base import CommandOutput

_FRAME = re.compile(
    rb"^@@burnin-frame (?P<token>[0-9a-f]+) (?P<key>\S+) rc=(?P<rc>-?\d+) out=(?P<out>\d+) err=(?P<err>\d+)$"
)

# `timeout` exits 124 when it had to stop the command (137 if the KILL after the grace period).
TIMEOUT_RCS = (124, 137)


@dataclass(frozen=True)
class Job:
    key: str  # identifies the command in the answer: [A-Za-z0-9_.-]+
    script: str  # bash
    timeout_s: int


def build_script(jobs: list[Job], token: str | None = None) -> tuple[str, str]:
    """The batch script and its frame token (random per run, so frames from an earlier,
    interrupted batch are never taken for this one's)."""
    token = token or secrets.token_hex(8)
    lines = [
        "set +e",
        "export LC_ALL=C",
        "b_dir=$(mktemp -d) || exit 97",
        "trap 'rm -rf \"$b_dir\"' EXIT",
        "b_run() {",
        '  timeout -k 5 "$2" bash "$b_dir/$1.sh" </dev/null >"$b_dir/$1.out" 2>"$b_dir/$1.err"',
        "  rc=$?",
        # One stat for both sizes: forks are most of a fast batch's cost on a busy node.
        '  sizes=$(stat -c %s "$b_dir/$1.out" "$b_dir/$1.err")',
        f'  printf "@@burnin-frame {token} %s rc=%s out=%s err=%s\\n" "$1" "$rc" $sizes',  # unquoted: out and err
        '  cat "$b_dir/$1.out" "$b_dir/$1.err"',
        "}",
    ]
    for job in jobs:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", job.key):
            raise ValueError(f"bad job key {job.key!r}")
        delimiter = f"BURNIN_{token}_{job.key.upper().replace('.', '_').replace('-', '_')}"
        if delimiter in job.script:
            raise ValueError(f"job {job.key}: script contains its own heredoc delimiter")
        lines += [f"cat >\"$b_dir/{job.key}.sh\" <<'{delimiter}'", job.script, delimiter]
    for job in jobs:
        lines.append(f"b_run {job.key} {int(job.timeout_s)}")
    return "\n".join(lines) + "\n", token


def parse_output(
    raw: bytes, token: str, keys: list[str], window: tuple[float, float] | None = None
) -> dict[str, CommandOutput]:
    """One CommandOutput per job key; a job whose frame never came back (the batch died or the
    connection dropped) gets one that says so, so it is judged UNKNOWN.

    ``window`` is the controller's clock before and after the round trip: every output carries
    it (the clock check compares the node's time with it).
    """
    started, finished = window or (None, None)
    results: dict[str, CommandOutput] = {}
    pos = 0
    while pos < len(raw):
        end = raw.find(b"\n", pos)
        if end < 0:
            break
        match = _FRAME.match(raw[pos:end])
        if match is None or match["token"].decode() != token:
            pos = end + 1  # noise before a frame (a login banner, a shell warning)
            continue
        out_len, err_len = int(match["out"]), int(match["err"])
        start = end + 1
        out = raw[start : start + out_len]
        err = raw[start + out_len : start + out_len + err_len]
        key, rc = match["key"].decode(), int(match["rc"])
        truncated = len(out) + len(err) < out_len + err_len
        results[key] = CommandOutput(
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            rc=rc,
            timed_out=rc in TIMEOUT_RCS,
            error="its output was cut off" if truncated else "",
            started_at=started,
            finished_at=finished,
        )
        pos = start + out_len + err_len
    for key in keys:
        results.setdefault(
            key, CommandOutput(stdout="", rc=None, error="the batch ended before it ran", started_at=started)
        )
    return results


def job_keys(commands: Mapping[str, str]) -> dict[str, str]:
    """check name -> job key, one job per distinct command string (the first check's name)."""
    by_command: dict[str, str] = {}
    keys = {}
    for check, command in commands.items():
        keys[check] = by_command.setdefault(command, check)
    return keys
