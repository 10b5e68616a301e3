"""The one-round-trip batch: scripts really run by bash, answers framed by byte counts."""

from __future__ import annotations

import subprocess

import pytest

from burnin.stages.batch import Job, build_script, job_keys, parse_output


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
