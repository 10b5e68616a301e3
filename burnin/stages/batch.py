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
    rb"(?: full=(?P<full_out>\d+),(?P<full_err>\d+))?(?P<held> held)?$"
)

# `timeout` exits 124 when it had to stop the command (137 if the KILL after the grace period).
TIMEOUT_RCS = (124, 137)
# How long what is left of a command's process group has between TERM and KILL, and how long the
# batch waits for the output of a command whose process outside its group still holds it open.
# 15 s, not 5: on the lab's 2-core machine running four test workers, commands that had nothing
# left running (copy_bandwidth, clock_offset, ib_ports) came back UNKNOWN as "held" after 5 s,
# most likely their output's own readers not yet scheduled to finish on the overloaded cores.
GRACE_S = 15
HELD = (
    f"a process that left its process group still held its output open {GRACE_S} s after it ended: "
    "what it printed after that was not read"
)


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
    ``parse_output`` marks the cut. The cut is made on the node as the output is written: each
    stream goes through a pipe to ``head -c`` (the head, unbuffered), then ``dd`` (which counts the rest)
    into ``tail -c`` (which keeps the last bytes in memory and writes them at the end), so a
    command that prints 100 GB costs the node's disk ``cap`` per stream, the wire and the
    controller ``cap``, and the commands after it still come back whole.

    Each command runs under ``timeout`` in a process group of its own; when it ends (at its
    limit or not), what is left of the group gets TERM, then KILL after a grace period, so a
    tool that ignores TERM or leaves children behind is not left running on the node. A
    process that left the group (setsid) but holds the output open is not waited for longer
    than the grace period: its frame says ``held``, and the output read by then is sent.
    """
    token = token or secrets.token_hex(8)
    cap = int(cap or output_cap())
    head, tail = cap // 2, cap - cap // 2
    lines = [
        "set +e",
        "export LC_ALL=C",
        "b_dir=$(mktemp -d) || exit 97",
        "trap 'rm -rf \"$b_dir\"' EXIT",
        'mkfifo "$b_dir/o.fifo" "$b_dir/e.fifo" "$b_dir/nap" || exit 97',
        'b_nap() { read -r -t "$1" _ <>"$b_dir/nap"; }  # a sleep without a fork: nothing writes there',
        # The head unbuffered (stdbuf, where there is one), so that a capper stopped early has
        # written all it read.
        "command -v stdbuf >/dev/null && b_head='stdbuf -o0 head' || b_head=head",
        # stdin -> $1.h (its first bytes), $1.t (the last bytes of the rest), $1.n (dd's count of the
        # rest); run by `timeout 0` (no limit) for its process group, which stops all three at once.
        f'b_cap="$b_head -c {head} >\\"\\$1.h\\"; dd bs=65536 2>\\"\\$1.n\\" | tail -c {tail} >\\"\\$1.t\\""',
        # The grace period, counted in naps (the wall clock may be stepped meanwhile): 50 of 2 ms,
        # for what ends at once, then naps of 0.1 s.
        f"b_grace={50 + GRACE_S * 10}",
        "b_wait() {  # a pid or -group: 0 once it is gone, 1 if still there after the grace period",
        "  b_i=0",
        '  while kill -0 -- "$1" 2>/dev/null; do',
        '    [ "$b_i" -ge "$b_grace" ] && return 1',
        '    if [ "$b_i" -lt 50 ]; then b_nap 0.002; else b_nap 0.1; fi',
        "    b_i=$((b_i + 1))",
        "  done",
        "}",
        "b_reap() {  # a process group: what is left of it gets TERM, then KILL after the grace period",
        '  kill -0 -- "-$1" 2>/dev/null || return 0',
        '  kill -TERM -- "-$1" 2>/dev/null',
        '  b_wait "-$1" || kill -KILL -- "-$1" 2>/dev/null',
        "}",
        "b_rest() {  # the count dd wrote in $1.n (its third line); empty when dd was stopped",
        '  b_n=; { read -r _; read -r _; read -r b_n _; } <"$1.n" 2>/dev/null',
        '  case "$b_n" in ""|*[!0-9]*) b_n=;; esac',
        "}",
        "b_run() {",
        '  for b_f in o.h o.t o.n e.h e.t e.n; do : >"$b_dir/$b_f"; done',
        '  timeout 0 sh -c "$b_cap" _ "$b_dir/o" <"$b_dir/o.fifo" & b_po=$!',
        '  timeout 0 sh -c "$b_cap" _ "$b_dir/e" <"$b_dir/e.fifo" & b_pe=$!',
        '  timeout -k 5 "$2" bash "$b_dir/$1.sh" </dev/null >"$b_dir/o.fifo" 2>"$b_dir/e.fifo" & b_pid=$!',
        '  wait "$b_pid"',
        "  rc=$?",
        '  b_reap "$b_pid"',
        "  b_held=",
        '  if ! { b_wait "$b_po" && b_wait "$b_pe"; }; then',
        '    b_held=" held"; b_reap "$b_po"; b_reap "$b_pe"',
        # New FIFOs: the process still holds the old ones, which would hold the next job too.
        '    rm -f "$b_dir/o.fifo" "$b_dir/e.fifo"; mkfifo "$b_dir/o.fifo" "$b_dir/e.fifo"',
        "  fi",
        '  wait "$b_po" "$b_pe"',
        # One stat for the four sizes: forks are most of a fast batch's cost on a busy node.
        '  set -- "$1" "$rc" $(stat -c %s "$b_dir/o.h" "$b_dir/o.t" "$b_dir/e.h" "$b_dir/e.t")',
        '  b_rest "$b_dir/o"; b_fo=$(($3 + ${b_n:-$4}))',
        '  b_rest "$b_dir/e"; b_fe=$(($5 + ${b_n:-$6}))',
        f'  printf "@@burnin-frame {token} %s rc=%s out=%s err=%s full=%s,%s%s\\n" \\',
        '    "$1" "$2" $(($3 + $4)) $(($5 + $6)) "$b_fo" "$b_fe" "$b_held"',
        '  cat "$b_dir/o.h" "$b_dir/o.t" "$b_dir/e.h" "$b_dir/e.t"',
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
        error = "its output was cut off" if truncated else ""
        if match["held"]:
            error = HELD
        results[key] = CommandOutput(
            stdout=stdout,
            stderr=stderr,
            rc=rc,
            timed_out=rc in TIMEOUT_RCS,
            error=error,
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
