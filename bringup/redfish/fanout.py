"""Run one function per BMC concurrently, under a bound, and keep every outcome.

One bad BMC never stops the others: each task's failure becomes its Outcome. Results are
handed to ``on_result`` in the calling thread as they arrive (the CLI saves them to the
fleet store there, so a crash later loses nothing already finished). Error messages pass
through the task's redactor before they leave, so no password survives in one.
"""

from __future__ import annotations

import logging
import queue
import resource
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from bringup.redfish.errors import InternalError, RedfishError

T = TypeVar("T")
log = logging.getLogger("bringup.redfish")
# The default concurrency is every BMC at once, up to this bound. A BMC's work is mostly
# waiting (17 requests of 50-500 ms each), so a rack of 256 in waves of 64 took four times as
# long as one wave. Past about 1,000 BMCs the client is bound by its one core (the GIL: ~3 ms
# of CPU per BMC, benchmarks/discover.py), so more threads buy nothing; 1,024 keeps a
# 1,024-node fleet in one wave (two waves of 512 measured 2.2-2.8x one BMC's time, against the
# 3x target, one wave 1.6x).
MAX_CONCURRENCY = 1024
# Descriptors kept free for the store, logs and the runtime beside one socket per worker.
FILES_RESERVE = 64
MANY_WORKERS = 16  # above this many threads, a longer GIL switch interval pays (see fan_out)
SWITCH_INTERVAL = 0.05


@dataclass
class Task(Generic[T]):
    name: str
    run: Callable[[], T]
    redact: Callable[[str], str] = str


@dataclass
class Outcome(Generic[T]):
    name: str
    value: T | None = None
    error: RedfishError | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def _run(task: Task[T]) -> Outcome[T]:
    t0 = time.monotonic()
    try:
        value = task.run()
        return Outcome(task.name, value=value, seconds=time.monotonic() - t0)
    except RedfishError as exc:
        err: RedfishError = exc
    except Exception as exc:  # noqa: BLE001 - a bug on one node must not stop the others
        err = InternalError(f"{type(exc).__name__}: {exc}")
    err.message = task.redact(err.message)
    err.args = (err.message,)
    err.__cause__ = err.__context__ = None  # the chain may hold request objects
    err.__traceback__ = None
    return Outcome(task.name, error=err, seconds=time.monotonic() - t0)


def default_concurrency(count: int) -> int:
    """BMCs worked on at once when the operator does not say: all of them, up to MAX_CONCURRENCY."""
    return max(1, min(count, MAX_CONCURRENCY))


def room_for(workers: int) -> int:
    """How many workers' sockets the open-file limit holds, raising the soft limit toward the
    hard one first (a shell's soft limit is often 1,024, the hard one far higher): without
    this, BMCs past the limit fail with "Too many open files" one by one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = workers + FILES_RESERVE
    if soft == resource.RLIM_INFINITY or soft >= need:
        return workers
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    fits = max(1, min(workers, soft - FILES_RESERVE))
    if fits < workers:
        log.warning(
            "%d BMCs at once need %d open files; the limit is %d (ulimit -n): %d at once",
            workers,
            need,
            soft,
            fits,
        )
    return fits


def fan_out(
    tasks: list[Task[T]],
    concurrency: int | None = None,
    on_result: Callable[[Outcome[T]], Any] | None = None,
) -> list[Outcome[T]]:
    """Outcomes in the order of ``tasks``; ``concurrency`` None: ``default_concurrency``.

    The workers are all started, parked, and only then released together: a thread pool
    that starts threads one per submit() spends seconds starting the last of 256 threads
    while the first ones already hold the GIL, and the run's wall time grows with it.

    With many workers the interpreter's GIL switch interval is raised for the run: at the
    default 5 ms, hundreds of threads waking for their sockets force so many GIL hand-offs
    that the client's CPU per BMC nearly doubles (measured: 256 BMCs 11.6 s -> 8.2 s).
    """
    if not tasks:
        return []
    concurrency = default_concurrency(len(tasks)) if concurrency is None else concurrency
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    todo: queue.SimpleQueue[tuple[int, Task[T]]] = queue.SimpleQueue()
    for item in enumerate(tasks):
        todo.put(item)
    done: queue.SimpleQueue[tuple[int, Outcome[T]]] = queue.SimpleQueue()
    go, stop = threading.Event(), threading.Event()

    def worker() -> None:
        go.wait()
        while not stop.is_set():
            try:
                i, task = todo.get_nowait()
            except queue.Empty:
                return
            done.put((i, _run(task)))

    workers = [
        threading.Thread(target=worker, name=f"bmc-{k}", daemon=True)
        for k in range(room_for(min(concurrency, len(tasks))))
    ]
    for w in workers:
        w.start()
    interval = sys.getswitchinterval()
    if len(workers) > MANY_WORKERS:
        sys.setswitchinterval(max(interval, SWITCH_INTERVAL))
    go.set()
    outcomes: dict[int, Outcome[T]] = {}
    try:
        while len(outcomes) < len(tasks):
            try:
                i, outcome = done.get(timeout=0.5)  # a timeout keeps Ctrl-C responsive
            except queue.Empty:
                continue
            outcomes[i] = outcome
            if on_result is not None:
                on_result(outcome)
    finally:
        stop.set()  # on an interrupt: no new BMC is started; those under way finish alone
        sys.setswitchinterval(interval)
    for w in workers:
        w.join()
    return [outcomes[i] for i in range(len(tasks))]
