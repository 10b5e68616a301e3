"""Reading what a command prints with a memory bound: its head and its tail, the middle counted.

One node that prints 100 MB (a kernel log in a loop, a tool gone wrong) must not cost the
controller 100 MB, let alone the several copies that decoding and judging make: at
``--concurrency 64`` that is the controller gone. ``HeadTail`` keeps the first and the last
part of a stream and counts what it dropped between them; ``text()`` marks the cut in the text
with how much was cut, so whoever reads the evidence (and the check judging it) knows.

``run_bounded`` runs a local command that way (burn-in of this machine); the SSH reader in
bringup/ssh/fanout.py and the launch watchdog in burnin/stages/launch.py feed the same buffer.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import IO

from bringup.core.cut import MIB, cut_marker, cut_note

# What one stream of one command (an SSH batch, a launch) may cost the controller.
STREAM_CAP = 16 * MIB


class HeadTail:
    """A byte buffer that keeps at most ``limit`` bytes: the first half and the latest half.

    The tail is a queue of chunks trimmed as it goes, so appending costs no more than the chunk;
    the memory held stays under ``limit`` plus one chunk.
    """

    def __init__(self, limit: int = STREAM_CAP) -> None:
        if limit < 2:
            raise ValueError(f"a capture limit must be at least 2 bytes, got {limit}")
        self.limit = limit
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
            if not data:
                return
        self._tail.append(bytes(data))
        self._tail_size += len(data)
        while self._tail and self._tail_size - len(self._tail[0]) >= self._tail_limit:
            self._tail_size -= len(self._tail.popleft())

    @property
    def dropped(self) -> int:
        return self.total - len(self._head) - min(self._tail_size, self._tail_limit)

    def _tail_bytes(self) -> bytes:
        tail = b"".join(self._tail)
        return tail[len(tail) - self._tail_limit :] if len(tail) > self._tail_limit else tail

    def getvalue(self) -> bytes:
        """The bytes kept, head and tail joined as they are (no marker): for framed streams."""
        return bytes(self._head) + self._tail_bytes()

    def text(self) -> str:
        """What was kept, decoded, with the cut marked where it was (nothing when nothing was cut)."""
        head = bytes(self._head).decode("utf-8", "replace")
        tail = self._tail_bytes().decode("utf-8", "replace")
        if not self.dropped:
            return head + tail
        return head + cut_marker(self.total, self.dropped) + tail

    def note(self, what: str = "output") -> str:
        """'' when nothing was cut, else the line saying what was (``cut_note``)."""
        return cut_note(self.total, self.dropped, what) if self.dropped else ""


def drain(stream: IO[bytes], into: HeadTail, chunk: int = 65536) -> None:
    """Read ``stream`` to its end into ``into`` (a reader thread's body)."""
    while True:
        data = stream.read1(chunk) if hasattr(stream, "read1") else stream.read(chunk)  # type: ignore[attr-defined]
        if not data:
            return
        into.write(data)


@dataclass(frozen=True)
class Bounded:
    stdout: HeadTail
    stderr: HeadTail
    rc: int | None  # None: it ran out of time and was killed
    error: str = ""


def run_bounded(argv: list[str], stdin: bytes, time_limit: float, limit: int = STREAM_CAP) -> Bounded:
    """Run ``argv`` with ``stdin``, each output stream kept to ``limit`` bytes (head and tail);
    killed (its whole process group) when it runs past ``time_limit`` seconds."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    out, err = HeadTail(limit), HeadTail(limit)
    readers = [
        threading.Thread(target=drain, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=drain, args=(proc.stderr, err), daemon=True),
    ]
    for t in readers:
        t.start()
    feeder = threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True)
    feeder.start()
    deadline = time.monotonic() + time_limit
    error = ""
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        error = f"time limit of {time_limit:.0f} s ran out"
        _kill(proc)
    except BaseException:  # Ctrl-C, a signal's exception: its own session would outlive us
        _kill(proc)
        raise
    for t in readers:
        t.join(timeout=5)
    return Bounded(out, err, None if error else proc.returncode, error)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    # A child in D state (a wedged driver) ignores SIGKILL: give up on it rather than hang.
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _feed(pipe: IO[bytes] | None, data: bytes) -> None:
    if pipe is None:
        return
    with contextlib.suppress(OSError):  # it exited without reading all of it
        pipe.write(data)
        pipe.close()
