"""Judge a saved tool output (pure): what `burnin evaluate FILE` does.

A file that is not text (a NUL byte, or more than 1% of it control characters or bytes that are
not UTF-8) is UNKNOWN, judged by nobody, with the reason; one larger than MAX_BYTES is refused
(BadInput): it was not read whole. Without a check named, the tool is
recognised (burnin.evaluate.recognise) and the checks that judge that tool's output judge it (all of them
for `nvidia-smi -q`, which four checks read); a text nobody recognises, or that looks like two
tools equally, is UNKNOWN with the reason, never a pass. A text that also holds another tool's
own lines is judged as the recognised tool's, but cannot pass: the rest was judged by nobody.
With a check named, that check judges it, whatever it looks like.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bringup.core.errors import BadInput
from bringup.profiles.load import Profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import SECTION_MARK, Check, CommandOutput, judge
from burnin.checks.evidence import EVIDENCE_CHECKS
from burnin.evaluate.recognise import Recognition, recognise
from burnin.result import PASSING, Result, Verdict, worst

MAX_BYTES = 64 * 1024 * 1024  # the largest tool output judged (a long dmesg is a few MB)
# Control characters no tool prints (tab, newline, CR, FF, VT, backspace and ESC they do).
_ODD_CONTROLS = re.compile(r"[\x00-\x07\x0e-\x1a\x1c-\x1f]")


def judging_checks() -> dict[str, Check]:
    """Every check `burnin evaluate --check` accepts: the stages' checks and the evidence-only ones."""
    return {**ALL_CHECKS, **EVIDENCE_CHECKS}


class NotText(BadInput):
    """A binary file handed in as a tool output: `burnin evaluate` answers it UNKNOWN."""


def read_evidence(data: bytes, source: str) -> str:
    """The text of a tool output; NotText (naming ``source``) for a binary one, BadInput for an
    oversized one."""
    if len(data) > MAX_BYTES:
        raise BadInput(
            f"{source}: {len(data)} bytes or more, over the {MAX_BYTES // (1024 * 1024)} MiB limit of a tool output"
        )
    if b"\x00" in data:
        raise NotText(f"{source}: a binary file (it holds NUL bytes), not a tool's text output")
    text = data.decode("utf-8", errors="replace")
    odd = text.count("\ufffd") + len(_ODD_CONTROLS.findall(text))
    if text and odd > max(8, len(text) // 100):
        raise NotText(
            f"{source}: a binary file ({odd} of {len(text)} characters are not text), not a tool's output"
        )
    return text


@dataclass(frozen=True)
class Evaluation:
    recognition: Recognition
    checks: tuple[str, ...]  # the checks that judged it (none: nothing could)
    results: tuple[Result, ...]
    verdict: Verdict
    reason: str  # why UNKNOWN when nothing judged it, else the results' reasons
    given: bool = False  # the check was named (--check), not recognised

    @property
    def tool(self) -> str | None:
        return self.recognition.tool.name if self.recognition.tool else None

    def findings(self) -> list[dict[str, Any]]:
        return [{"check": r.check, **f.to_dict()} for r in self.results for f in r.findings]

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.checks[0] if len(self.checks) == 1 else list(self.checks),
            "tool": self.tool,
            "confidence": self.recognition.confidence,
            "recognised_by": self.recognition.reason,
            "check_given": self.given,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "findings": self.findings(),
            "results": [r.to_dict() for r in self.results],
        }


def _prepare(text: str, section: str) -> str:
    if section and SECTION_MARK not in text:
        text = f"{SECTION_MARK}{section}\n{text}"
    return text


def evaluate_text(
    text: str, profile: Profile, check_name: str | None = None, rc: int | None = 0
) -> Evaluation:
    """Recognise (unless ``check_name`` is given) and judge one tool output."""
    recognition = recognise(text)
    checks = judging_checks()
    if check_name is not None:
        check = _named_check(check_name)
        tool = recognition.tool
        section = tool.section if tool is not None and check.name in tool.checks else ""
        result = judge(check, CommandOutput(stdout=_prepare(text, section), rc=rc), profile)
        return Evaluation(recognition, (check.name,), (result,), result.verdict, result.reason, given=True)
    tool = recognition.tool
    if tool is None:
        return Evaluation(recognition, (), (), Verdict.UNKNOWN, recognition.reason)
    if not tool.checks:
        reason = f"recognised as {tool.name}, which no check judges" + (
            f": {tool.instead}" if tool.instead else ""
        )
        return Evaluation(recognition, (), (), Verdict.UNKNOWN, reason)
    missing = [name for name in tool.checks if name not in checks]
    if missing:  # a registry entry naming a check that does not exist: a bug here, never a pass
        reason = f"recognised as {tool.name}, but its check(s) {', '.join(missing)} do not exist"
        return Evaluation(recognition, tuple(tool.checks), (), Verdict.UNKNOWN, reason)
    output = CommandOutput(stdout=_prepare(text, tool.section), rc=rc)
    results = tuple(judge(checks[name], output, profile) for name in tool.checks)
    reason = "; ".join(
        f"{r.check}: {r.reason}" if len(results) > 1 else r.reason for r in results if r.reason
    )
    verdict = worst(r.verdict for r in results)
    other = _second_tool(recognition)
    if other and verdict in PASSING:
        # The recognised tool's part may be clean, but the rest of the file was not judged at all.
        verdict = Verdict.UNKNOWN
        reason = f"the file also holds {other}: judge each tool's output on its own" + (
            f"; {reason}" if reason else ""
        )
    return Evaluation(recognition, tuple(tool.checks), results, verdict, reason)


def _named_check(name: str) -> Check:
    checks = judging_checks()
    check = checks.get(name)
    if check is None:
        raise BadInput(f"unknown check {name!r} (checks: {', '.join(sorted(checks))})")
    return check


def _second_tool(recognition: Recognition) -> str:
    """Another tool whose own lines (its strongest marker, which the winner lacks and does not
    print itself) are in the text too."""
    if not recognition.candidates:
        return ""
    winner = recognition.candidates[0]
    for other in recognition.candidates[1:]:
        if other.found[0] not in winner.found and other.tool.name not in winner.tool.includes:
            return f"{other.tool.name} output ({other.reason()})"
    return ""


def evaluate_evidence(
    data: bytes, profile: Profile, *, source: str, check_name: str | None = None, rc: int | None = 0
) -> Evaluation:
    """`burnin evaluate`: the raw bytes of a saved output (a file or stdin) judged; a binary file
    is UNKNOWN, judged by nobody (the check named, if any, is still named)."""
    try:
        text = read_evidence(data, source)
    except NotText as exc:
        given = (_named_check(check_name).name,) if check_name is not None else ()
        recognition = Recognition(None, 0.0, "not recognised: a binary file is no tool's output")
        return Evaluation(recognition, given, (), Verdict.UNKNOWN, str(exc), bool(given))
    return evaluate_text(text, profile, check_name, rc)


# -- several files at once: an operator's ticket attachments (`burnin evaluate DIR` / FILE FILE ...)

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class FileJudged:
    """One handed-in file: its evaluation, or why it could not be read (then UNKNOWN)."""

    path: str
    evaluation: Evaluation | None
    unread: str = ""  # why the file was not judged: unreadable, binary, over MAX_BYTES

    @property
    def verdict(self) -> Verdict:
        return self.evaluation.verdict if self.evaluation is not None else Verdict.UNKNOWN

    @property
    def tool(self) -> str | None:
        return self.evaluation.tool if self.evaluation is not None else None

    def first_finding(self) -> str:
        """The most severe finding's message (the first of that severity), else the reason."""
        if self.evaluation is None:
            return self.unread
        findings = sorted(self.evaluation.findings(), key=lambda f: _SEVERITY_ORDER.get(f["severity"], 3))
        return findings[0]["message"] if findings else self.evaluation.reason

    def to_dict(self) -> dict[str, Any]:
        out = {
            "file": self.path,
            "tool": self.tool,
            "verdict": self.verdict.value,
            "first_finding": self.first_finding(),
        }
        out["evaluation"] = self.evaluation.to_dict() if self.evaluation is not None else None
        return out


@dataclass(frozen=True)
class HandedIn:
    """Every file judged, in the order given (a directory's files sorted by path)."""

    files: tuple[FileJudged, ...]

    @property
    def verdict(self) -> Verdict:
        """The worst file's verdict; no file at all is UNKNOWN (nothing was judged)."""
        return worst(f.verdict for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict.value, "files": [f.to_dict() for f in self.files]}


def files_of(paths: Sequence[Path]) -> list[Path]:
    """The files named, a directory's files (all of its tree, sorted, hidden ones left out)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        else:
            out.append(path)
    return out


def evaluate_files(
    paths: Sequence[Path], profile: Profile, *, check_name: str | None = None, rc: int | None = 0
) -> HandedIn:
    """`burnin evaluate DIR` / `FILE FILE ...`: each file read with a size cap (one at a time, its
    text dropped once judged) and judged as `burnin evaluate FILE` would; a file that cannot be
    read, is binary or too large is an UNKNOWN row with why, and the others carry on."""
    if check_name is not None:
        _named_check(check_name)  # an unknown check is the command line's mistake, not a row
    judged: list[FileJudged] = []
    for path in files_of(paths):
        try:
            with path.open("rb") as stream:
                data = stream.read(MAX_BYTES + 1)
        except OSError as exc:
            judged.append(FileJudged(str(path), None, f"could not read it: {exc.strerror or exc}"))
            continue
        try:
            evaluation = evaluate_evidence(data, profile, source=str(path), check_name=check_name, rc=rc)
        except BadInput as exc:  # over MAX_BYTES: not read whole
            judged.append(FileJudged(str(path), None, str(exc)))
            continue
        finally:
            del data
        judged.append(FileJudged(str(path), evaluation))
    return HandedIn(tuple(judged))
