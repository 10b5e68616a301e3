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
from dataclasses import dataclass
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
