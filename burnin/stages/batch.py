"""All checks of a stage on one node in one round trip (docs/design.md, idea 7).

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

from bringup.core.cut import cut_marker, cut_note
from bringup.fleet.evidence import output_cap
from burnin.checks.base import CommandOutput

_FRAME = re.compile(
    rb"^@@burnin-frame (?P<token>[0-9a-f]+) (?P<key>\S+) rc=(?P<rc>-?\d+) out=(?P<out>\d+) err=(?P<err>\d+)"
    rb"(?: full=(?P<full_out>\d+),(?P<full_err>\d+))?$"
)

# `timeout` exits 124 when it had to stop the command (137 if the KILL after the grace period).
TIMEOUT_RCS = (124, 137)


@dataclass(frozen=True)
class Job:
    key: str  # identifies the command in the answer: [A-Za-z0-9_.-]+
    script: str  # bash
    timeout_s: int


def build_script(jobs: list[Job], token: str | None = None, cap: int | None = None) -> tuple[str, str]:
    """The batch script and its frame token (random per run, so frames from an earlier,
    interrupted batch are never taken for this one's).

    An output over ``cap`` bytes (default: the evidence cap, 4 MiB) is sent as its first and
    last ``cap/2`` bytes; its frame says how long it really was (``full=``), and
    ``parse_output`` marks the cut. A command that prints 100 MB costs the wire and the
    controller ``cap``, and the commands after it still come back whole.
    """
    token = token or secrets.token_hex(8)
    cap = int(cap or output_cap())
    head, tail = cap // 2, cap - cap // 2
    lines = [
        "set +e",
        "export LC_ALL=C",
        "b_dir=$(mktemp -d) || exit 97",
        "trap 'rm -rf \"$b_dir\"' EXIT",
        "b_send() {  # file size: the file, or its head and tail when over the cap",
        f'  if [ "$2" -gt {cap} ]; then head -c {head} "$1"; tail -c {tail} "$1"; else cat "$1"; fi',
        "}",
        "b_run() {",
        '  timeout -k 5 "$2" bash "$b_dir/$1.sh" </dev/null >"$b_dir/$1.out" 2>"$b_dir/$1.err"',
        "  rc=$?",
        # One stat for both sizes: forks are most of a fast batch's cost on a busy node.
        '  set -- "$1" "$rc" $(stat -c %s "$b_dir/$1.out" "$b_dir/$1.err")',
        f'  o=$3; e=$4; [ "$o" -gt {cap} ] && o={cap}; [ "$e" -gt {cap} ] && e={cap}',
        f'  printf "@@burnin-frame {token} %s rc=%s out=%s err=%s full=%s,%s\\n" "$1" "$2" "$o" "$e" "$3" "$4"',
        '  b_send "$b_dir/$1.out" "$3"',
        '  b_send "$b_dir/$1.err" "$4"',
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
        full_out = int(match["full_out"] or out_len)
        full_err = int(match["full_err"] or err_len)
        stdout, stdout_cut = _uncut(out, full_out)
        stderr, stderr_cut = _uncut(err, full_err)
        results[key] = CommandOutput(
            stdout=stdout,
            stderr=stderr,
            rc=rc,
            timed_out=rc in TIMEOUT_RCS,
            error="its output was cut off" if truncated else "",
            started_at=started,
            finished_at=finished,
            cut="; ".join(n for n in (stdout_cut, stderr_cut and f"stderr {stderr_cut}") if n),
        )
        pos = start + out_len + err_len
    for key in keys:
        results.setdefault(
            key, CommandOutput(stdout="", rc=None, error="the batch ended before it ran", started_at=started)
        )
    return results


def _uncut(sent: bytes, full: int) -> tuple[str, str]:
    """The text of an output the node sent whole, or as its head and tail (``full`` > sent):
    then with the cut marked in it, and the line that says so."""
    if full <= len(sent):
        return sent.decode("utf-8", "replace"), ""
    half = len(sent) // 2
    dropped = full - len(sent)
    text = (
        sent[:half].decode("utf-8", "replace")
        + cut_marker(full, dropped)
        + sent[half:].decode("utf-8", "replace")
    )
    return text, cut_note(full, dropped)


def job_keys(commands: Mapping[str, str]) -> dict[str, str]:
    """check name -> job key, one job per distinct command string (the first check's name)."""
    by_command: dict[str, str] = {}
    keys = {}
    for check, command in commands.items():
        keys[check] = by_command.setdefault(command, check)
    return keys
