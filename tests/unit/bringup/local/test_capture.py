"""Reading outputs with a memory bound (58 MB of tool output cost 773 MB)."""

from __future__ import annotations

import tracemalloc

from bringup.core.cut import MIB
from bringup.local.capture import HeadTail, run_bounded


def test_what_fits_is_kept_whole():
    buf = HeadTail(100)
    buf.write(b"hello\n")
    assert (buf.getvalue(), buf.text(), buf.dropped, buf.note()) == (b"hello\n", "hello\n", 0, "")


def test_the_head_and_the_latest_tail_are_kept_and_the_cut_is_marked():
    buf = HeadTail(1000)
    buf.write(b"HEAD\n")
    for i in range(10_000):
        buf.write(b"line %06d\n" % i)
    buf.write(b"THE END\n")
    kept = buf.getvalue()
    assert len(kept) == 1000 and kept.startswith(b"HEAD\n") and kept.endswith(b"line 009999\nTHE END\n")
    assert buf.total == 5 + 12 * 10_000 + 8 and buf.dropped == buf.total - 1000
    text = buf.text()
    assert text.startswith("HEAD\n") and text.endswith("THE END\n")
    assert "[... output cut at 0.0 MB: 0.1 MB of 0.1 MB not kept" in text
    assert buf.note("stdout").startswith("stdout cut at 0.0 MB: 0.1 MB printed")


def test_a_hundred_megabytes_cost_the_bound_not_the_output():
    tracemalloc.start()
    try:
        buf = HeadTail(4 * MIB)
        chunk = b"x" * 65536
        for _ in range(100 * MIB // len(chunk)):
            buf.write(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert buf.total == 100 * MIB and len(buf.getvalue()) == 4 * MIB
    assert peak < 5 * MIB  # the bound and a chunk or two, not 100 MB


def test_a_local_command_that_prints_without_end_is_bounded():
    done = run_bounded(
        ["bash", "-c", "echo first; head -c 30000000 /dev/zero | tr '\\0' y; echo; echo last"], b"", 60, MIB
    )
    assert done.rc == 0 and not done.error
    assert done.stdout.total > 30_000_000 and len(done.stdout.getvalue()) == MIB
    text = done.stdout.text()
    assert text.startswith("first\n") and text.endswith("\nlast\n") and "output cut at 1.0 MB" in text
    assert done.stdout.note() == "output cut at 1.0 MB: 28.6 MB printed, 27.6 MB in its middle not kept"


def test_a_local_command_past_its_time_limit_is_killed_with_what_it_printed():
    done = run_bounded(["bash", "-s"], b"echo started; sleep 30\n", 1)
    assert done.rc is None and "time limit of 1 s" in done.error and done.stdout.text() == "started\n"
