"""The one-round-trip batch: scripts really run by bash, answers framed by byte counts."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time

import pytest

from burnin.stages.batch import HELD, Job, build_script, job_keys, parse_output


def run(jobs: list[Job], token: str = "feedc0de") -> dict:
    script, token = build_script(jobs, token)
    raw = subprocess.run(["bash", "-s"], input=script.encode(), capture_output=True, timeout=60).stdout
    return parse_output(raw, token, [j.key for j in jobs], window=(1.0, 2.0))


def test_outputs_come_back_byte_exact_per_job() -> None:
    out = run(
        [
            Job("plain", "echo hello; echo oops >&2; exit 3", 10),
            Job("no-newline", "printf 'a\\nb'", 10),
            Job("fake-frame", "echo '@@burnin-frame feedc0de plain rc=0 out=1 err=0'", 10),
            Job("heredoc", "cat <<'EOF'\nx $HOME y\nEOF", 10),
        ]
    )
    assert out["plain"].stdout == "hello\n" and out["plain"].stderr == "oops\n" and out["plain"].rc == 3
    assert out["no-newline"].stdout == "a\nb"
    assert out["fake-frame"].stdout.startswith("@@burnin-frame feedc0de plain")
    assert out["plain"].stdout == "hello\n"  # the fake frame did not overwrite the real one
    assert out["heredoc"].stdout == "x $HOME y\n"
    assert out["plain"].started_at == 1.0 and out["plain"].finished_at == 2.0


def test_a_job_past_its_timeout_is_marked_and_the_next_still_runs() -> None:
    out = run([Job("slow", "echo started; sleep 30", 1), Job("after", "echo fine", 10)])
    assert out["slow"].timed_out and out["slow"].stdout == "started\n"
    assert out["after"].stdout == "fine\n" and not out["after"].timed_out


def test_missing_frames_are_errors_not_silence() -> None:
    script, token = build_script([Job("a", "echo a", 5), Job("b", "echo b", 5)], "0123")
    raw = subprocess.run(["bash", "-s"], input=script.encode(), capture_output=True).stdout
    cut = raw[: raw.index(b"@@burnin-frame 0123 b")]
    out = parse_output(cut, token, ["a", "b"])
    assert out["a"].stdout == "a\n" and not out["a"].error
    assert out["b"].error and out["b"].stdout == ""


def test_truncated_frame_is_flagged() -> None:
    raw = b"@@burnin-frame abcd a rc=0 out=100 err=0\nonly a bit"
    out = parse_output(raw, "abcd", ["a"])
    assert out["a"].error == "its output was cut off"


def test_frames_of_another_token_are_ignored() -> None:
    raw = b"@@burnin-frame 9999 a rc=0 out=2 err=0\nx\n"
    assert parse_output(raw, "abcd", ["a"])["a"].error


def test_same_command_runs_once() -> None:
    keys = job_keys({"ecc": "nvidia-smi -q", "inventory": "nvidia-smi -q", "nvlink": "nvidia-smi nvlink -s"})
    assert keys == {"ecc": "ecc", "inventory": "ecc", "nvlink": "nvlink"}


@pytest.mark.parametrize("key", ["a b", "a;b", "", "x/y"])
def test_bad_keys_are_refused(key: str) -> None:
    with pytest.raises(ValueError):
        build_script([Job(key, "true", 1)])


# -- bounds on the node: what a tool writes there, and what it leaves running ---------------------

MIB = 1024 * 1024


def run_watching_tmp(jobs: list[Job], tmp_path, cap: int) -> tuple[dict, int]:
    """The batch run by bash with TMPDIR in ``tmp_path``, and the most the batch's temporary
    directory held on disk at any moment (sampled every few ms while it ran)."""
    script, token = build_script(jobs, "feedc0de", cap=cap)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    with subprocess.Popen(
        ["bash", "-s"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    ) as proc:
        chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()))
        reader.start()
        proc.stdin.write(script.encode())
        proc.stdin.close()
        peak = 0
        while proc.poll() is None:
            peak = max(peak, disk_bytes(tmp_path))
            time.sleep(0.005)
        reader.join()
    return parse_output(b"".join(chunks), token, [j.key for j in jobs]), peak


def disk_bytes(top) -> int:
    """The blocks the files under ``top`` hold (what fills a disk), in bytes."""
    total = 0
    for root, _, files in os.walk(top):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def test_a_flooding_tool_writes_no_more_than_the_cap_on_the_node(tmp_path) -> None:
    """50 MB from one tool, 1 MiB cap: the node's temporary directory holds the head and the tail
    (twice the cap at most, stdout and stderr), not the 50 MB; the cut is said as the controller
    says a cut, and the next job comes back whole."""
    flood = "echo first; head -c 50000000 /dev/zero | tr '\\0' z; echo; echo last"
    out, peak = run_watching_tmp([Job("flood", flood, 60), Job("after", "echo fine", 10)], tmp_path, MIB)
    assert peak <= 2 * MIB + 256 * 1024, f"{peak} bytes on disk"
    assert out["flood"].stdout.startswith("first\nzzz") and out["flood"].stdout.endswith("zzz\nlast\n")
    assert out["flood"].cut.startswith("output cut at 1.0 MB: 47.7 MB printed")
    assert out["after"].stdout == "fine\n" and not out["after"].cut


def test_a_tool_flooding_until_its_limit_is_bounded_and_marked(tmp_path) -> None:
    out, peak = run_watching_tmp([Job("yes", "yes", 2)], tmp_path, MIB)
    assert peak <= 2 * MIB + 256 * 1024, f"{peak} bytes on disk"
    assert out["yes"].timed_out and out["yes"].cut.startswith("output cut at 1.0 MB")
    assert out["yes"].stdout.startswith("y\ny\n")


def test_an_output_between_the_head_and_the_cap_comes_back_whole(tmp_path) -> None:
    text = "".join(f"line {i}\n" for i in range(200))  # 1,490 bytes: over the head, under the cap
    out, _ = run_watching_tmp([Job("mid", f"cat <<'EOF'\n{text}EOF\necho err >&2", 5)], tmp_path, 2000)
    assert out["mid"].stdout == text and not out["mid"].cut and out["mid"].stderr == "err\n"


def test_a_tool_past_its_limit_is_gone_with_its_children_even_when_it_ignores_term(tmp_path) -> None:
    """The main process dies on TERM at the limit; a child that ignores TERM, and its own child,
    are killed too (KILL after TERM, to the job's whole process group), before the next job."""
    pids = tmp_path / "pids"
    hung = (
        f"(trap '' TERM; sleep 300 & echo $! >> {pids}; echo $BASHPID >> {pids}; sleep 300) &\n"
        f"echo $$ >> {pids}; sleep 300"
    )
    out, _ = run_watching_tmp([Job("hung", hung, 2), Job("after", f"cat {pids}", 5)], tmp_path, MIB)
    assert out["hung"].timed_out
    left = [p for p in pids.read_text().split() if alive(int(p))]
    assert len(pids.read_text().split()) == 3 and left == []
    assert out["after"].stdout == pids.read_text()  # killed before the next job ran


def test_what_a_job_leaves_behind_is_killed_when_it_ends(tmp_path) -> None:
    """A job that returns with a process still running in the background (its output still
    open): the batch does not wait for it, and it does not outlive the job."""
    pid = tmp_path / "pid"
    out, _ = run_watching_tmp([Job("leaky", f"sleep 300 & echo $! > {pid}; echo done", 10)], tmp_path, MIB)
    assert out["leaky"].stdout == "done\n" and out["leaky"].rc == 0
    assert not alive(int(pid.read_text()))


def alive(pid: int) -> bool:
    """Running (a zombie no longer runs: its parent has not read its status yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_process_that_left_the_group_holding_the_output_does_not_hold_the_batch(tmp_path) -> None:
    """setsid puts a process out of the job's process group, out of reach of the kill; if it
    keeps the output open, the batch stops reading after the grace period, says so, and the
    next job is not held by it."""
    pid = tmp_path / "pid"
    # It writes its pid once out of the group; the job waits for that (no race with the kill).
    script = (
        f"setsid sh -c 'echo $$ > {pid}.new; mv {pid}.new {pid}; exec sleep 300' &\n"
        f"while [ ! -s {pid} ]; do sleep 0.01; done; echo started"
    )
    try:
        out, _ = run_watching_tmp([Job("escaped", script, 10), Job("after", "echo fine", 10)], tmp_path, MIB)
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid.read_text()), signal.SIGKILL)
    assert out["escaped"].stdout == "started\n" and out["escaped"].error == HELD
    assert out["after"].stdout == "fine\n" and not out["after"].error
