"""The spool: how the results of a stage run as a Slurm job come back to the fleet store.

With ``burnin run --launcher slurm`` (burnin.stages.slurm_launch) every node runs its stage as one
task of a Slurm job, ``burnin run --local --spool-dir DIR``: it runs the stage's batch on itself,
judges each check with the same code the SSH path runs on the controller (runner.stage_batch,
parse_output, judge_stage), and writes one result file into a directory on a filesystem the
controller also mounts (NFS or Lustre on a GPU cluster). The controller ingests the files as they
appear. Why a spool directory rather than a results endpoint on the controller: the nodes need
no database or endpoint credentials, no port is opened on the controller, a controller that is
briefly gone loses nothing (the files wait), and 10,000 small files are what a shared
filesystem does every day; polling a directory (``os.scandir``) is also what works on NFS, where
inotify sees nothing written by another client.

A result file is ``<run>-<node>-<stage>.json`` in the run's directory, written atomically (a
dot-named temporary file in the same directory, fsync, rename), so a reader sees a whole file
or none. Its ``results`` are each check's ``Result.to_dict()`` and the evidence kept with it,
exactly what the SSH path hands to ``FleetStore.add_results``; an output several checks read
(``nvidia-smi -q``) is written once in ``texts`` and each result names its index there, as the
store keeps it once. Some checks are judged on
the controller instead, as over SSH: a check read from the node's record alone (the BMC event
log, which only the controller has), a check whose judgement needs the controller's clock
(``CONTROLLER_JUDGED``: the clock offset, judged against the window from the job's submission to
the moment the controller saw the file) and one that reads the node's record beside its output
(``needs_record``: the BMC's GPU list against nvidia-smi); for the last two the task ships its
raw output.

The watcher hands each file over once: it remembers what it has handed over, and moves a file
into ``ingested/`` only once the consumer has committed its results (``arrivals``). A crash
before the commit leaves the file where it was; nothing is recorded twice by one run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bringup.core.cut import MIB, mb
from bringup.core.errors import BadInput
from bringup.profiles.load import Profile, apply_overrides, find_profile
from burnin.checks.base import Check, CommandOutput
from burnin.result import Finding, Result, Verdict, worst
from burnin.stages import STAGE_ORDER, is_group_stage, stage_checks
from burnin.stages.batch import parse_output
from burnin.stages.jobs import BurninOutcome, StageOutcome
from burnin.stages.runner import batch_time_limit, judge_stage, run_local, stage_batch

FORMAT = "burnin-spool-result/1"
# Checks whose judgement compares the node with the controller's clock: the node sends their
# raw output and the controller judges them (over SSH the controller's window is the round trip).
CONTROLLER_JUDGED = frozenset({"clock_offset"})


def judged_on_controller(check: Check) -> bool:
    """A check the task ships raw output of: it needs the controller's clock, or the node's
    record beside its output (``needs_record``: the BMC's GPU list), which only the controller has."""
    return check.name in CONTROLLER_JUDGED or check.needs_record


INGESTED = "ingested"
# What the controller reads of one file at most: a stage's outputs are each capped at the evidence
# cap (4 MiB) by the batch, and a stage has a few dozen checks.
MAX_FILE_BYTES = 64 * MIB
# Result files ingested as one store transaction at most: a node's file is a few MiB at worst,
# so a batch stays well under a GiB in memory; the Slurm path's ingest was a transaction a node.
BATCH = 200
LOGS = "logs"
PROFILES = "profiles"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# The launcher's variables are dropped before the batch runs, so the checks run as over SSH:
# with SLURM_PROCID set an MPI-built `all_reduce_perf -g 8` takes itself for one rank of a job.
_LAUNCHER_ENV = ("SLURM_", "SLURMD_", "PMI_", "PMIX_", "OMPI_")


class SpoolError(BadInput):
    """A result file that is not what a task writes (names the file and the field)."""


# ---- pure: names and the document ---------------------------------------------------------------


def run_dir(spool: str | Path, run_id: int) -> Path:
    """The run's own directory under the spool root."""
    return Path(spool) / f"run-{int(run_id)}"


def result_name(run_id: int, node: str, stage: str) -> str:
    if not _NAME.fullmatch(node):
        raise SpoolError(f"node name {node!r}: not a node name (letters, digits, '.', '_', '-')")
    return f"{int(run_id)}-{node}-{stage}.json"


def digest(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def _output_dict(output: CommandOutput) -> dict[str, Any]:
    return {
        "stdout": output.stdout,
        "stderr": output.stderr,
        "rc": output.rc,
        "timed_out": output.timed_out,
        "error": output.error,
        "cut": output.cut,
    }


def result_document(
    run_id: int,
    node: str,
    stage: str,
    judged: Sequence[tuple[Result, str]],
    outputs: Mapping[str, CommandOutput],
    *,
    error: str = "",
    profile_sha256: str = "",
    overrides: Sequence[str] = (),
    window: tuple[float, float] = (0.0, 0.0),
    host: str = "",
) -> dict[str, Any]:
    """What a task writes: its node's judged results with their evidence, the raw outputs of the
    controller-judged checks, the batch's error, and what it judged with."""
    texts: list[str] = []
    index: dict[str, int] = {}
    for _, evidence in judged:
        if evidence not in index:
            index[evidence] = len(texts)
            texts.append(evidence)
    return {
        "format": FORMAT,
        "run_id": int(run_id),
        "node": node,
        "stage": stage,
        "host": host,
        "profile_sha256": profile_sha256,
        "set": list(overrides),
        "window": [float(window[0]), float(window[1])],
        "error": error,
        "texts": texts,
        "results": [{**r.to_dict(), "evidence": index[evidence]} for r, evidence in judged],
        "outputs": {name: _output_dict(o) for name, o in outputs.items()},
    }


@dataclass(frozen=True)
class SpoolResult:
    """One node's stage as its task reported it (parsed and checked)."""

    path: str
    run_id: int
    node: str
    stage: str
    judged: list[tuple[Result, str]]
    outputs: dict[str, CommandOutput] = field(default_factory=dict)
    error: str = ""
    profile_sha256: str = ""
    overrides: tuple[str, ...] = ()
    host: str = ""


def _need(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise SpoolError(f"{where}: field {key!r} is missing")
    value = data[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise SpoolError(f"{where}: field {key!r} must be {names}, got {type(value).__name__}")
    return value


def _result(row: Any, where: str, texts: list[str]) -> tuple[Result, str]:
    if not isinstance(row, dict):
        raise SpoolError(f"{where}: a result must be an object")
    check = _need(row, "check", str, where)
    verdict = _need(row, "verdict", str, where)
    if verdict not in {v.value for v in Verdict}:
        raise SpoolError(
            f"{where} ({check}): field 'verdict' is {verdict!r}, not one of PASS, WARN, UNKNOWN, FAIL"
        )
    findings = []
    for i, f in enumerate(_need(row, "findings", list, where)):
        if not isinstance(f, dict) or not isinstance(f.get("message"), str):
            raise SpoolError(f"{where} ({check}): findings[{i}] has no message")
        try:
            findings.append(Finding.from_dict(f))
        except ValueError as exc:
            raise SpoolError(f"{where} ({check}): findings[{i}]: {exc}") from None
    result = Result(
        check,
        Verdict(verdict),
        dict(_need(row, "metrics", dict, where)),
        tuple(findings),
        _need(row, "reason", str, where),
    )
    evidence = _need(row, "evidence", int, where)
    if not 0 <= evidence < len(texts):
        raise SpoolError(f"{where} ({check}): field 'evidence' is {evidence}, not an index into 'texts'")
    return result, texts[evidence]


def _output(data: Any, where: str) -> CommandOutput:
    if not isinstance(data, dict):
        raise SpoolError(f"{where}: an output must be an object")
    rc = data.get("rc")
    if rc is not None and (not isinstance(rc, int) or isinstance(rc, bool)):
        raise SpoolError(f"{where}: field 'rc' must be an integer or null")
    return CommandOutput(
        stdout=_need(data, "stdout", str, where),
        stderr=_need(data, "stderr", str, where),
        rc=rc,
        timed_out=bool(_need(data, "timed_out", bool, where)),
        error=_need(data, "error", str, where),
        cut=_need(data, "cut", str, where),
    )


def parse_result(text: str | bytes, path: str) -> SpoolResult:
    """A result file's content, checked field by field; SpoolError names the file and the field."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SpoolError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise SpoolError(f"{path}: not a JSON object")
    if data.get("format") != FORMAT:
        raise SpoolError(f"{path}: field 'format' is {data.get('format')!r}, expected {FORMAT!r}")
    stage = _need(data, "stage", str, path)
    if stage not in STAGE_ORDER or is_group_stage(stage):
        raise SpoolError(f"{path}: field 'stage' is {stage!r}, not a single-node stage")
    node = _need(data, "node", str, path)
    if not _NAME.fullmatch(node):
        raise SpoolError(f"{path}: field 'node' is {node!r}, not a node name")
    overrides = _need(data, "set", list, path)
    if not all(isinstance(s, str) for s in overrides):
        raise SpoolError(f"{path}: field 'set' must be a list of KEY=VALUE strings")
    texts = _need(data, "texts", list, path)
    if not all(isinstance(t, str) for t in texts):
        raise SpoolError(f"{path}: field 'texts' must be a list of strings")
    rows = _need(data, "results", list, path)
    judged = [_result(row, f"{path}: results[{i}]", texts) for i, row in enumerate(rows)]
    outputs = {
        str(name): _output(o, f"{path}: outputs[{name!r}]")
        for name, o in _need(data, "outputs", dict, path).items()
    }
    return SpoolResult(
        path=path,
        run_id=_need(data, "run_id", int, path),
        node=node,
        stage=stage,
        judged=judged,
        outputs=outputs,
        error=_need(data, "error", str, path),
        profile_sha256=_need(data, "profile_sha256", str, path),
        overrides=tuple(overrides),
        host=str(data.get("host", "")),
    )


def merge_judged(
    plan: Sequence[Check],
    profile: Profile,
    reported: SpoolResult,
    record: dict[str, Any],
    window: tuple[float, float],
) -> list[tuple[Result, str]]:
    """The node's stage as the SSH path would have judged it, in the plan's order: the node's
    own results, with the record-based checks and ``CONTROLLER_JUDGED`` ones judged here (the
    latter against ``window``, the controller's clock from submission to the file)."""
    from_node = {r.check: (r, evidence) for r, evidence in reported.judged}
    here = [c for c in plan if c.command(profile) is None or judged_on_controller(c)]
    shipped = {c.name for c in here if judged_on_controller(c)}
    outputs = {
        name: replace(o, started_at=window[0], finished_at=window[1])
        for name, o in reported.outputs.items()
        if name in shipped
    }
    keys = {c.name: c.name for c in here if c.name in outputs}
    judgeable = [c for c in here if c.command(profile) is None or c.name in keys]
    local = {r.check: (r, evidence) for r, evidence in judge_stage(judgeable, profile, outputs, keys, record)}
    merged = []
    for check in plan:
        found = local.get(check.name) or from_node.get(check.name)
        if found is None:
            why = reported.error or "the task did not report it"
            found = (Result.unknown(check.name, f"no result in {Path(reported.path).name}: {why}"), "")
        merged.append(found)
    return merged


# ---- I/O: the task's side -------------------------------------------------------------------------


def write_result(directory: str | Path, doc: dict[str, Any]) -> Path:
    """Write a result file atomically: a dot-named temporary beside it, fsync, rename, fsync the
    directory. A watcher never sees half a file; a task killed midway leaves only a dot file."""
    directory = Path(directory)
    path = directory / result_name(doc["run_id"], doc["node"], doc["stage"])
    tmp = directory / f".{path.name}.{os.getpid()}.tmp"
    data = json.dumps(doc, separators=(",", ":")).encode()
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


@dataclass
class TaskOutcome:
    path: Path  # the result file written
    outcome: BurninOutcome  # what the node judged (the controller-judged checks are not in it)


def run_task(
    spool: str | Path,
    run_id: int,
    node: str,
    stage: str,
    profile_file: str | Path,
    overrides: Sequence[str] = (),
) -> TaskOutcome:
    """What one Slurm task does (``burnin run --local --spool-dir``): the stage's batch on this
    machine, judged as the controller judges it over SSH, written into the run's spool directory."""
    if stage not in STAGE_ORDER or is_group_stage(stage):
        raise BadInput(f"--spool-dir runs one single-node stage, not {stage!r}")
    profile_path = Path(profile_file)
    profile = apply_overrides(find_profile(str(profile_path), profile_path.parent), overrides)
    directory = run_dir(spool, run_id)
    if not directory.is_dir():
        raise BadInput(f"--spool-dir: {directory} does not exist here (is the shared filesystem mounted?)")
    for name in [k for k in os.environ if k.startswith(_LAUNCHER_ENV)]:
        del os.environ[name]
    plan = [c for c in stage_checks(stage, profile) if c.command(profile) is not None]
    script, token, keys = stage_batch(plan, profile)
    raw, error, window, cut = run_local(script, batch_time_limit(plan, profile))
    outputs = parse_output(raw, token, sorted(set(keys.values())), window)
    if cut:  # as BurninRun.run does with an answer over the bound
        error = f"{cut}; {error}" if error else cut
    if error:
        outputs = {
            k: (o if not o.error else CommandOutput("", rc=None, error=error)) for k, o in outputs.items()
        }
    judged = judge_stage([c for c in plan if not judged_on_controller(c)], profile, outputs, keys, {})
    raw_outputs = {c.name: outputs[keys[c.name]] for c in plan if judged_on_controller(c)}
    doc = result_document(
        run_id,
        node,
        stage,
        judged,
        raw_outputs,
        error=error,
        profile_sha256=digest(profile_path.read_bytes()),
        overrides=overrides,
        window=window,
        host=socket.gethostname(),
    )
    path = write_result(directory, doc)
    results = [r for r, _ in judged]
    stage_outcome = StageOutcome(node, stage, worst(r.verdict for r in results), results, error)
    return TaskOutcome(path, BurninOutcome(node, [stage_outcome]))


# ---- I/O: the controller's side -------------------------------------------------------------------


@dataclass(frozen=True)
class SpoolProblem:
    """A node's result file that could not be taken (unreadable, malformed, another run's)."""

    node: str
    path: str
    message: str


class SpoolWatcher:
    """Finds the result files of one stage as they appear in a run's directory.

    ``poll()`` returns what is new since the last call: one SpoolResult (or SpoolProblem) per
    expected node whose file has appeared; ``done(path)`` moves a file into ``ingested/`` once the
    caller has committed it. Other files (other stages, temporaries, strays) are left alone."""

    def __init__(self, directory: str | Path, run_id: int, stage: str, nodes: Sequence[str]):
        self.directory = Path(directory)
        self.run_id, self.stage = int(run_id), stage
        self.expected = {result_name(run_id, n, stage): n for n in nodes}
        self.seen: set[str] = set()

    @property
    def waiting(self) -> list[str]:
        """The nodes not heard from yet."""
        return sorted(n for name, n in self.expected.items() if name not in self.seen)

    def poll(self) -> list[SpoolResult | SpoolProblem]:
        """Every file that is new since the last call, read now."""
        return [self._read(name, node) for name, node in self._new()]

    def arrivals(self) -> Iterator[SpoolResult | SpoolProblem]:
        """The new files, read one at a time (10,000 files are never in memory at once); a
        result's file is moved into ``ingested/`` only when the consumer asks for the next one,
        that is once it has committed this one. A consumer that stops midway (a crash, Ctrl-C)
        leaves the file where it was: nothing taken is lost."""
        for batch in self.batches(1):
            yield from batch

    def batches(self, most: int = BATCH) -> Iterator[list[SpoolResult | SpoolProblem]]:
        """The new files in lists of at most ``most`` (what the consumer commits as one
        transaction); a list's result files are moved into ``ingested/`` only when the consumer
        asks for the next list, that is once it has committed this one."""
        new = self._new()
        for start in range(0, len(new), most):
            batch = [self._read(name, node) for name, node in new[start : start + most]]
            yield batch
            for item in batch:
                if isinstance(item, SpoolResult):
                    self.done(item.path)

    def _new(self) -> list[tuple[str, str]]:
        """(file name, node) of the expected files that appeared since they were last read."""
        try:
            entries = [e.name for e in os.scandir(self.directory)]
        except FileNotFoundError:
            return []
        return [(n, self.expected[n]) for n in sorted(entries) if n in self.expected and n not in self.seen]

    def _read(self, name: str, node: str) -> SpoolResult | SpoolProblem:
        self.seen.add(name)
        path = self.directory / name
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:  # a node's outputs are capped (4 MiB each): this is not a task's
                return SpoolProblem(
                    node, str(path), f"{path}: {mb(size)}, over the {mb(MAX_FILE_BYTES)} a result may be"
                )
            result = parse_result(path.read_bytes(), str(path))
        except OSError as exc:
            return SpoolProblem(node, str(path), f"cannot read it: {exc}")
        except SpoolError as exc:
            return SpoolProblem(node, str(path), str(exc))
        mismatch = [
            f"{key} is {got!r}, expected {want!r}"
            for key, got, want in (
                ("run_id", result.run_id, self.run_id),
                ("node", result.node, node),
                ("stage", result.stage, self.stage),
            )
            if got != want
        ]
        if mismatch:
            return SpoolProblem(node, str(path), f"{path}: " + "; ".join(mismatch))
        return result

    def done(self, path: str | Path) -> None:
        """The file's results are committed: out of the way, kept as the node wrote it."""
        target = self.directory / INGESTED
        target.mkdir(exist_ok=True)
        os.replace(path, target / Path(path).name)
