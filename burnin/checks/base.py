"""The check model (docs/design.md, idea 3): a check = ``command()`` + ``evaluate(output, profile)``.

``command`` says what to run on a node (a bash script, or None for a check judged from the
node's record, such as the BMC event log). ``evaluate`` is pure: it parses the output with
burnin.parsers and judges it against the hardware profile. ``judge`` wraps it so that a
check that could not run, timed out, or produced something unparseable is UNKNOWN with the
reason, and no exception ever escapes: a bug in a check must never read as a pass.

A check also declares, on its class, where it runs and what it reads and judges (``stages``,
``service``, ``reads``, ``judges``), and registers itself where it is defined
(burnin.checks.registry): the stages, `burnin health` and `burnin evaluate` take their checks
from those declarations, never from a list of names.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from enum import Enum
from typing import ClassVar

from bringup.profiles.load import Profile
from burnin.parsers import ParseError
from burnin.result import Result

# A multi-part output (e.g. PCIe links at idle, under load, after) is split by lines of this form.
SECTION_MARK = "@@burnin-section "


@dataclass(frozen=True)
class CommandOutput:
    """What came back from running a check's command on a node."""

    stdout: str
    stderr: str = ""
    rc: int | None = 0
    timed_out: bool = False
    error: str = ""  # it could not be run at all (SSH failed, the batch died): why
    started_at: float | None = None  # controller clock (epoch seconds) around the run
    finished_at: float | None = None
    # The output was over the cap and its middle was not kept: what was cut ('output cut at
    # 4.0 MB: ...'). The runner makes the verdict UNKNOWN unless what was kept shows a failure.
    cut: str = ""


class Service(Enum):
    """Whether `burnin health` runs a check on a node in service (burnin.service.health)."""

    NEVER = "never"
    ALWAYS = "always"  # cheap, read-only, safe beside a running job
    ON_REQUEST = "on request"  # only when asked (--container): it loads the GPUs or pulls an image


class Check(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    # -- what the check declares about itself (burnin.checks.registry derives every list from these)
    # The single-node stages (burnin.stages.STAGES) that run it, in the order of their commands
    # within a stage; () for a check only `burnin evaluate` applies to a handed-in output.
    stages: ClassVar[tuple[str, ...]] = ()
    service: ClassVar[Service] = Service.NEVER  # whether `burnin health` runs it
    # The tools (names as burnin.evaluate.markers spells them) whose saved output `burnin evaluate`
    # recognises and hands to this check; () when its output is no tool's a file can be told by.
    reads: ClassVar[tuple[str, ...]] = ()
    # The profile fields (dotted, as in bringup.profiles.model: "gpu.count") its verdict holds the
    # node to, or that decide whether it applies; not those that only shape its command.
    judges: ClassVar[tuple[str, ...]] = ()
    # Derived: the stage its results are filed under, its first ("" for an evaluate-only check).
    stage: ClassVar[str] = ""
    timeout_s: ClassVar[int] = 60
    # Exit codes that mean "the tool ran and its output is to be judged" (ibstat exits 255
    # after printing good data, dcgmi non-zero when a test fails): the check decides.
    judge_any_rc: ClassVar[bool] = False
    # An output with no end of its own (a kernel log is what the ring buffer holds, df lists the
    # mounts there are): whole at any line end, so its parser cannot tell a cut there. Every other
    # output has a structure whose end its parser finds, and refuses (ParseError) when it is
    # missing: a missing final newline alone is no cut (docs/burnin.md, "A cut output").
    whole_at_line_ends: ClassVar[bool] = False
    # A check that runs a command and also reads the node's record (the BMC's GPU list beside
    # nvidia-smi): the stage hands it ``with_record(record, stdout)`` instead of the bare output.
    needs_record: ClassVar[bool] = False
    # The GPU vendors ("nvidia", "amd") whose nodes it serves, declared by a check whose text names
    # one vendor's tool without using it (a comment of an embedded program); () derives them from
    # what it reads and runs (burnin/checks/vendor.py).
    vendors: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "stages" in cls.__dict__:
            cls.stage = cls.stages[0] if cls.stages else ""

    def applies(self, profile: Profile) -> bool:
        """Whether the profile's hardware has what this check looks at (no NVSwitch, no ZFS...)."""
        return True

    def timeout(self, profile: Profile) -> int:
        return self.timeout_s

    @abstractmethod
    def command(self, profile: Profile) -> str | None:
        """The bash script to run on the node; None when the check reads the node's record."""

    def from_record(self, record: dict) -> str:
        """For a check whose command() is None: its input, taken from the node's record."""
        raise NotImplementedError(f"{self.name} runs a command on the node")

    def with_record(self, record: dict, stdout: str) -> str:
        """For a check that ``needs_record``: its input, the record beside its command's output."""
        raise NotImplementedError(f"{self.name} does not read the node's record")

    @abstractmethod
    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        """Judge the output. May raise ParseError; ``judge`` turns that into UNKNOWN."""


def judge(check: Check, output: CommandOutput, profile: Profile) -> Result:
    """``check.evaluate`` with the failure modes of running things turned into UNKNOWN."""
    if output.error:
        return Result.unknown(check.name, f"could not run: {output.error}")
    if output.timed_out:
        return Result.unknown(check.name, f"timed out after {check.timeout(profile)} s")
    if output.rc in (126, 127):
        detail = _last_line(output.stderr) or _last_line(output.stdout)
        return Result.unknown(check.name, f"the tool is not installed or not executable ({detail})")
    if output.rc not in (0, None) and not check.judge_any_rc and not output.stdout.strip():
        detail = _last_line(output.stderr) or "no output"
        return Result.unknown(check.name, f"exited {output.rc} with no output ({detail})")
    if not output.stdout.strip():
        detail = _last_line(output.stderr)
        return Result.unknown(check.name, "the command printed nothing" + (f" ({detail})" if detail else ""))
    if check.whole_at_line_ends and not output.stdout.endswith("\n"):
        return _judged_without_a_partial_line(check, output, profile)
    return _evaluated(check, output, profile)


def _evaluated(check: Check, output: CommandOutput, profile: Profile) -> Result:
    try:
        return check.evaluate(output, profile)
    except ParseError as exc:
        return Result.unknown(check.name, f"could not parse the output: {exc}")
    except Exception as exc:  # noqa: BLE001 - a bug in a check is UNKNOWN, never a pass
        return Result.unknown(check.name, f"evaluation error: {type(exc).__name__}: {exc}")


def _judged_without_a_partial_line(check: Check, output: CommandOutput, profile: Profile) -> Result:
    """An output with no end whose last line has no newline: that line may be whole (a paste
    saved without one) or cut mid-line (a prefix of a count, of a path, of an Xid). It cannot
    count towards a pass: the output is judged without it, and with it, and the worse verdict
    stands (a failure the line shows is shown; a line that read as a recovery does not clear)."""
    head = output.stdout[: output.stdout.rfind("\n") + 1]
    with_line = _evaluated(check, output, profile)
    if not head.strip():
        return with_line  # one line: nothing before it to judge instead
    without = _evaluated(check, replace(output, stdout=head), profile)
    return with_line if with_line.verdict.rank >= without.verdict.rank else without


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


# What str.splitlines ends a line at: a mark starts a line after one of these (or at 0).
_LINE_ENDS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
_LINE_END_RE = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def sections(text: str) -> dict[str, str]:
    """Split ``@@burnin-section NAME`` parts; text before the first mark is section ''.

    A section is the text between two mark lines, cut out whole: the marks are found with
    str.find, not by walking every line (a 900-line output was 0.15 ms a node)."""
    parts: dict[str, list[str]] = {"": []}
    current, last = "", 0  # the section being read, where its text began
    at = text.find(SECTION_MARK)
    while at >= 0:
        if at == 0 or text[at - 1] in _LINE_ENDS:  # the mark begins a line
            end = _LINE_END_RE.search(text, at)
            after = end.end() if end else len(text)
            parts[current].append(text[last:at])
            current = text[at + len(SECTION_MARK) : after].strip()
            parts.setdefault(current, [])
            last = after
        at = text.find(SECTION_MARK, at + 1)
    parts[current].append(text[last:])
    return {name: "".join(chunks) for name, chunks in parts.items()}


def section_mark(name: str) -> str:
    """The shell line that starts section NAME of a multi-part command's output."""
    if not re.fullmatch(r"[a-z0-9_-]+", name):
        raise ValueError(f"bad section name {name!r}")
    return f"echo '{SECTION_MARK}{name}'"
