"""Multi-node launchers: `mpirun` (a hostfile, ranks started over SSH) and Slurm `srun`.

The command lines are pure functions of a ``LaunchSettings`` and the hosts, so they are tested
without a cluster. ``run_watched`` is the I/O edge: it starts a launch in its own process group
and a watchdog ends it when it prints no new line for ``idle_timeout_s`` (a hung collective
prints nothing; a healthy one prints a result row per message size), or when it runs past
``max_total_s``. Ending it: SIGTERM to the launcher alone (mpirun and srun then stop their
remote ranks themselves), SIGKILL to the whole group after a grace period, then the cancel
command (``scancel --name`` for srun, so a step whose srun died does not hold the nodes).

Settings come from inventory variables (rack-wide, ``all.vars``), overridden by the command
line; a production rack says e.g.::

    burnin_launcher: srun
    burnin_ranks_per_node: 8            # one rank per GPU
    slurm_partition: gpu
    slurm_gpus_per_node: 8
    burnin_launch_env: {NCCL_IB_HCA: "mlx5_0,mlx5_1,...", NCCL_SOCKET_IFNAME: bond0}
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from bringup.core.errors import UserError
from bringup.local.capture import STREAM_CAP, HeadTail

LAUNCHERS = ("mpirun", "srun")
LINE_CAP = 65536  # bytes of one output line read at a time
KILL_GRACE_S = 8.0  # srun waits up to KillWait (+ a little) for its step after SIGTERM


class LaunchError(UserError, ValueError):
    """The launcher settings are wrong (unknown launcher, a bad value): nothing was started."""


@dataclass(frozen=True)
class LaunchHost:
    name: str  # the node's inventory name = its Slurm node name
    address: str  # where mpirun's SSH reaches it


@dataclass(frozen=True)
class LaunchSettings:
    launcher: str = "mpirun"
    ranks_per_node: int = 1  # 8 on an HGX node: one rank per GPU
    env: Mapping[str, str] = field(default_factory=dict)  # exported to every rank (NCCL_*)
    # `stdbuf -oL`, so a C program's rows reach the watchdog as they are printed. None: for srun
    # only (its ranks write into a pipe, block-buffered); Open MPI gives its ranks a pty already.
    line_buffered: bool | None = None
    # mpirun
    mpirun: str = "mpirun"
    ssh_key: str | None = None
    ssh_user: str | None = None
    ssh_port: int | None = None
    ssh_options: str = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
    mca: Mapping[str, str] = field(default_factory=dict)  # --mca KEY VALUE (btl, *_if_include, ...)
    mpirun_args: tuple[str, ...] = ()
    allow_run_as_root: bool = True
    # srun
    srun: str = "srun"
    partition: str | None = None
    reservation: str | None = None
    account: str | None = None
    gpus_per_node: int | None = None
    srun_mpi: str | None = None  # --mpi=pmix|pmi2 (None: the cluster's MpiDefault)
    immediate_s: int = 30  # srun against a drained or busy node would wait forever
    time_limit_min: int | None = None
    srun_args: tuple[str, ...] = ()
    chdir: str = "/tmp"  # nodes share no filesystem
    slurm_conf: str | None = None  # SLURM_CONF for srun/scancel (a non-default cluster, e.g. the lab)
    # The watchdog's allowance for the first line (ranks starting, MPI/NCCL wire-up); None: the
    # same as for every later line (diag.nccl_iteration_timeout_s).
    startup_timeout_s: float | None = None


# inventory variable -> LaunchSettings field
SETTING_VARS: dict[str, str] = {
    "burnin_launcher": "launcher",
    "burnin_ranks_per_node": "ranks_per_node",
    "burnin_launch_env": "env",
    "burnin_line_buffered": "line_buffered",
    "mpirun_path": "mpirun",
    "mpirun_ssh_options": "ssh_options",
    "mpirun_mca": "mca",
    "mpirun_args": "mpirun_args",
    "srun_path": "srun",
    "slurm_partition": "partition",
    "slurm_reservation": "reservation",
    "slurm_account": "account",
    "slurm_gpus_per_node": "gpus_per_node",
    "slurm_mpi": "srun_mpi",
    "slurm_immediate_s": "immediate_s",
    "slurm_time_limit_min": "time_limit_min",
    "srun_args": "srun_args",
    "slurm_chdir": "chdir",
    "slurm_conf": "slurm_conf",
    "burnin_startup_timeout_s": "startup_timeout_s",
}


# Inventory variables of the stages that launch (not launcher settings, passed along with them).
STAGE_VARS = ("nccl_test_args", "nccl_tests_dir", "fabric_plan")


def group_settings(inventory_vars: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """The launcher and stage variables of a rack (its ``all.vars``), with command-line
    ``overrides`` (by variable name; None = not given) on top: BurninRun.group_settings."""
    out = {k: inventory_vars[k] for k in (*SETTING_VARS, *STAGE_VARS) if inventory_vars.get(k) is not None}
    out.update({k: v for k, v in overrides.items() if v is not None})
    return out


def _coerce(name: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool) or name == "line_buffered":
        if isinstance(value, str):
            return value.strip().lower() in ("1", "true", "yes", "on")
        return bool(value)
    if name in ("env", "mca"):
        if not isinstance(value, Mapping):
            raise LaunchError(f"{name} must be a mapping of NAME: value, got {value!r}")
        return {str(k): str(v) for k, v in value.items()}
    if name in ("mpirun_args", "srun_args"):
        return tuple(shlex.split(value)) if isinstance(value, str) else tuple(str(v) for v in value)
    if name == "startup_timeout_s":
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise LaunchError(f"{name} must be a number of seconds, got {value!r}") from exc
    if isinstance(default, int) or name in ("gpus_per_node", "time_limit_min", "ssh_port"):
        try:
            return int(value)
        except (TypeError, ValueError) as exc:
            raise LaunchError(f"{name} must be an integer, got {value!r}") from exc
    return str(value)


def settings_from(values: Mapping[str, Any], **extra: Any) -> LaunchSettings:
    """LaunchSettings from inventory-style variables (``SETTING_VARS``); None values are ignored.
    ``extra`` sets fields directly (the SSH key and user the runner knows from its targets)."""
    defaults = LaunchSettings()
    kwargs: dict[str, Any] = {}
    for var, name in SETTING_VARS.items():
        if values.get(var) is not None:
            kwargs[name] = _coerce(name, values[var], getattr(defaults, name))
    known = {f.name for f in fields(LaunchSettings)}
    for name, value in extra.items():
        if name not in known:
            raise LaunchError(f"unknown launch setting {name!r}")
        if value is not None:
            kwargs[name] = value
    settings = LaunchSettings(**kwargs)
    if settings.launcher not in LAUNCHERS:
        raise LaunchError(f"unknown launcher {settings.launcher!r} (use one of: {', '.join(LAUNCHERS)})")
    if settings.ranks_per_node < 1:
        raise LaunchError("ranks_per_node must be at least 1")
    return settings


# ---- pure: command lines -----------------------------------------------------------------------


def hostfile_text(hosts: Sequence[LaunchHost], slots: int) -> str:
    """An Open MPI hostfile: one ``address slots=N`` line per host, in rank order."""
    return "".join(f"{h.address} slots={slots}\n" for h in hosts)


def _program(settings: LaunchSettings, argv: Sequence[str]) -> list[str]:
    wrap = settings.line_buffered if settings.line_buffered is not None else settings.launcher == "srun"
    return (["stdbuf", "-oL", "-eL"] if wrap else []) + list(argv)


def ssh_command_args(settings: LaunchSettings) -> str:
    """What mpirun adds to every `ssh` it runs (``plm_rsh_args``)."""
    parts = []
    if settings.ssh_key:
        parts += ["-i", shlex.quote(settings.ssh_key)]
    if settings.ssh_user:
        parts += ["-l", shlex.quote(settings.ssh_user)]
    if settings.ssh_port and settings.ssh_port != 22:
        parts += ["-p", str(settings.ssh_port)]
    if settings.ssh_options:
        parts.append(settings.ssh_options)
    return " ".join(parts)


def mpirun_command(
    settings: LaunchSettings, hosts: Sequence[LaunchHost], argv: Sequence[str], hostfile: str
) -> list[str]:
    """``mpirun`` over ``hosts`` (listed in ``hostfile``, see hostfile_text) running ``argv``."""
    if not hosts:
        raise LaunchError("mpirun needs at least one host")
    cmd = [settings.mpirun]
    if settings.allow_run_as_root:
        cmd.append("--allow-run-as-root")
    cmd += ["--hostfile", hostfile, "-np", str(len(hosts) * settings.ranks_per_node)]
    cmd += ["--map-by", f"ppr:{settings.ranks_per_node}:node", "--bind-to", "none"]
    rsh = ssh_command_args(settings)
    if rsh:
        cmd += ["--mca", "plm_rsh_args", rsh]
    for key, value in settings.mca.items():
        cmd += ["--mca", key, value]
    for name, value in settings.env.items():
        cmd += ["-x", f"{name}={value}"]
    cmd += list(settings.mpirun_args)
    return cmd + _program(settings, argv)


def srun_command(
    settings: LaunchSettings, hosts: Sequence[LaunchHost], argv: Sequence[str], job_name: str
) -> list[str]:
    """``srun`` over exactly ``hosts`` (by Slurm node name) running ``argv``."""
    if not hosts:
        raise LaunchError("srun needs at least one host")
    cmd = [
        settings.srun,
        f"--immediate={settings.immediate_s}",
        f"--nodes={len(hosts)}",
        f"--ntasks-per-node={settings.ranks_per_node}",
        f"--nodelist={','.join(h.name for h in hosts)}",
        f"--job-name={job_name}",
        f"--chdir={settings.chdir}",
        "--kill-on-bad-exit=1",
    ]
    if settings.partition:
        cmd.append(f"--partition={settings.partition}")
    if settings.reservation:
        cmd.append(f"--reservation={settings.reservation}")
    if settings.account:
        cmd.append(f"--account={settings.account}")
    if settings.gpus_per_node:
        cmd.append(f"--gpus-per-node={settings.gpus_per_node}")
    if settings.srun_mpi:
        cmd.append(f"--mpi={settings.srun_mpi}")
    if settings.time_limit_min:
        cmd.append(f"--time={settings.time_limit_min}")
    cmd += list(settings.srun_args)
    return cmd + _program(settings, argv)


def cancel_command(settings: LaunchSettings, job_name: str) -> list[str] | None:
    """What frees the nodes if the launcher itself had to be killed (srun: scancel the job)."""
    if settings.launcher != "srun":
        return None
    return ["scancel", f"--name={job_name}"]


def launch_env(settings: LaunchSettings, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The launcher's own environment. srun passes its environment on to the ranks (the default
    ``--export=ALL``), so the ranks' variables go there; mpirun gets them as ``-x`` instead."""
    env = dict(os.environ if base is None else base)
    if settings.slurm_conf:
        env["SLURM_CONF"] = settings.slurm_conf
    if settings.launcher == "srun":
        env.update(settings.env)
    return env


@dataclass(frozen=True)
class Launch:
    """One launch, ready to run: the command, its environment, what cancels it, its hostfile."""

    command: list[str]
    env: dict[str, str]
    cancel: list[str] | None
    hostfile_text: str = ""  # written to the path named in the command before it starts
    hostfile_path: str = ""


def build_launch(
    settings: LaunchSettings,
    hosts: Sequence[LaunchHost],
    argv: Sequence[str],
    job_name: str,
    hostfile_path: str = "",
    base_env: Mapping[str, str] | None = None,
) -> Launch:
    """The launch of ``argv`` over ``hosts`` with the configured launcher (pure)."""
    env = launch_env(settings, base_env)
    if settings.launcher == "srun":
        return Launch(srun_command(settings, hosts, argv, job_name), env, cancel_command(settings, job_name))
    if not hostfile_path:
        raise LaunchError("mpirun needs a hostfile path")
    return Launch(
        mpirun_command(settings, hosts, argv, hostfile_path),
        env,
        None,
        hostfile_text(hosts, settings.ranks_per_node),
        hostfile_path,
    )


# ---- pure: how a launch died ---------------------------------------------------------------------

# Signals that say a rank crashed. srun's own SIGTERM/SIGKILL of the ranks it takes down after the
# first one died ("Terminated", "Killed") are not among them.
CRASH_SIGNALS = (
    "Segmentation fault",
    "Aborted",
    "Bus error",
    "Illegal instruction",
    "Floating point exception",
)
_SRUN_TASK = re.compile(r"^srun: error: (\S+): task (\d+): (.+?)\s*$")
_MPIRUN_RANK = re.compile(
    r"mpirun noticed that process rank (\d+) with PID \d+ on node (\S+) exited on signal \d+ \((.+?)\)"
)


def crashed_rank(text: str) -> str | None:
    """``NODE: task N: SIGNAL`` (srun) or ``NODE: rank N: SIGNAL`` (mpirun) for the first rank a
    crash signal killed, from the launcher's output; None when no rank died of one."""
    for line in text.splitlines():
        if (m := _SRUN_TASK.match(line)) and m.group(3) in CRASH_SIGNALS:
            return f"{m.group(1)}: task {m.group(2)}: {m.group(3)}"
        if (m := _MPIRUN_RANK.search(line)) and m.group(3) in CRASH_SIGNALS:
            return f"{m.group(2)}: rank {m.group(1)}: {m.group(3)}"
    return None


# ---- pure: the watchdog's decision ---------------------------------------------------------------


@dataclass
class Watchdog:
    """Decides when a launch has to be ended. Times are monotonic seconds, passed in.

    Until the launch has started up, ``startup_s`` applies when given (starting ranks over SSH
    or Slurm and wiring them up takes longer than printing the next row); then
    ``idle_timeout_s``. A line ends start-up when ``progress`` is told so: for nccl-tests, the
    first result row, since NCCL builds its communicators after the device lines."""

    idle_timeout_s: float
    max_total_s: float | None = None
    startup_s: float | None = None
    started: float = 0.0
    last_progress: float = 0.0
    lines: int = 0
    started_up: bool = False

    def start(self, now: float) -> None:
        self.started = self.last_progress = now

    def progress(self, now: float, ends_startup: bool = True) -> None:
        self.last_progress = now
        self.lines += 1
        self.started_up = self.started_up or ends_startup

    @property
    def limit_s(self) -> float:
        """The silence allowed now."""
        if not self.started_up and self.startup_s is not None:
            return max(self.startup_s, self.idle_timeout_s)
        return self.idle_timeout_s

    def expired(self, now: float) -> str | None:
        """Why the launch must end now, or None."""
        if self.max_total_s is not None and now - self.started >= self.max_total_s:
            return f"ran past its limit of {self.max_total_s:g} s"
        if now - self.last_progress >= self.limit_s:
            if self.lines == 0:
                return f"no output line at all within {self.limit_s:g} s of the start"
            if not self.started_up:
                return f"no new output line for {self.limit_s:g} s while starting up"
            return f"no new output line for {self.limit_s:g} s"
        return None

    def wait_s(self, now: float) -> float:
        """How long nothing can happen before the watchdog would fire."""
        left = self.limit_s - (now - self.last_progress)
        if self.max_total_s is not None:
            left = min(left, self.max_total_s - (now - self.started))
        return max(0.0, left)

    def silent_s(self, now: float) -> float:
        return now - self.last_progress


# ---- I/O: running a launch -----------------------------------------------------------------------


@dataclass
class LaunchOutcome:
    stdout: str
    stderr: str
    rc: int | None  # None: killed by the watchdog
    killed: str = ""  # why the watchdog ended it ('' if it ended by itself)
    elapsed_s: float = 0.0
    silent_s: float = 0.0  # seconds without a new line when it ended
    last_line: str = ""  # the last stdout line before the end
    after_kill: str = ""  # what came out once the watchdog ended it (the launcher's own dying words)
    started_up: bool = True  # False: it ended before start-up was over (see Watchdog)
    cut: str = ""  # what was cut out of its output to keep within the bound ('' : nothing)

    @property
    def hung(self) -> bool:
        return bool(self.killed)


Line = tuple[str, "str | None", float]  # (stream, line or None at EOF, when it was read)


def _reader(stream: Any, name: str, out: queue.Queue[Line], clock: Callable[[], float]) -> None:
    try:
        # A line is read at most LINE_CAP bytes at a time: one endless line is many pieces.
        for raw in iter(lambda: stream.readline(LINE_CAP), b""):
            out.put((name, raw.decode("utf-8", errors="replace"), clock()))
    finally:
        out.put((name, None, clock()))


def run_watched(
    launch: Launch,
    idle_timeout_s: float,
    max_total_s: float | None = None,
    on_line: Callable[[str], None] | None = None,
    kill_grace_s: float = KILL_GRACE_S,
    clock: Callable[[], float] = time.monotonic,
    startup_s: float | None = None,
    ends_startup: Callable[[str], bool] | None = None,
    max_output: int = STREAM_CAP,
) -> LaunchOutcome:
    """Run a launch to its end or until the watchdog ends it. A new stdout line is progress;
    the first one ``ends_startup`` accepts (any line, when not given) ends start-up."""
    if launch.hostfile_path:
        with open(launch.hostfile_path, "w") as f:
            f.write(launch.hostfile_text)
    proc = subprocess.Popen(
        launch.command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=launch.env,
        start_new_session=True,  # its own process group: the watchdog can end all of it
    )
    lines: queue.Queue[Line] = queue.Queue()
    threads = [
        threading.Thread(target=_reader, args=(proc.stdout, "out", lines, clock), daemon=True),
        threading.Thread(target=_reader, args=(proc.stderr, "err", lines, clock), daemon=True),
    ]
    for t in threads:
        t.start()
    dog = Watchdog(idle_timeout_s, max_total_s, startup_s)
    dog.start(clock())
    # Bounded (bringup.local.capture): a launch that prints without end keeps its head and its tail.
    out, err, after = HeadTail(max_output), HeadTail(max_output), HeadTail(max_output)
    open_streams = 2
    killed = ""
    killed_at = 0.0
    silent = 0.0
    last_line = ""
    while open_streams:
        try:
            stream, line, _ = lines.get(timeout=max(0.05, dog.wait_s(clock())))
        except queue.Empty:
            reason = dog.expired(clock())
            if reason:
                killed, silent, killed_at = reason, dog.silent_s(clock()), clock()
                _end(proc, launch.cancel, launch.env, kill_grace_s)
                break
            continue
        if line is None:
            open_streams -= 1
            continue
        if stream == "out":
            out.write(line.encode())
            dog.progress(clock(), ends_startup is None or ends_startup(line))
            if line.strip():
                last_line = line.rstrip("\n")
            if on_line:
                on_line(line.rstrip("\n"))
        else:
            err.write(line.encode())
    if killed:
        for t in threads:
            t.join(timeout=5)
        while not lines.empty():
            stream, line, when = lines.get_nowait()
            if line is None:
                continue
            if when > killed_at:
                after.write(line.encode())
            else:
                (out if stream == "out" else err).write(line.encode())
    rc = proc.wait() if not killed else None
    if killed:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
    if launch.hostfile_path:
        with contextlib.suppress(OSError):
            os.unlink(launch.hostfile_path)
    return LaunchOutcome(
        out.text(),
        err.text(),
        rc,
        killed,
        clock() - dog.started,
        silent or dog.silent_s(clock()),
        last_line,
        after.text(),
        dog.started_up,
        "; ".join(n for n in (out.note(), err.note("stderr")) if n),
    )


def _end(proc: subprocess.Popen[bytes], cancel: list[str] | None, env: dict[str, str], grace: float) -> None:
    """SIGTERM the launcher (it stops its ranks), SIGKILL its whole group after ``grace``, cancel."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if cancel:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(cancel, env=env, capture_output=True, timeout=30)
