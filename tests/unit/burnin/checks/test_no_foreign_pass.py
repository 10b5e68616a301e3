"""The property test: over every check, no input that is not the check's own tool output
gets PASS. Each check must recognise its tool's output (a marker line, a header, a JSON shape),
so anything else is UNKNOWN (or a finding), never a clean bill of health.

Inputs: random text and random bytes as a node would send them (decoded with replacement),
every sample of another tool (tests/fixtures/samples and the lab stand-ins' recordings), and
line-boundary truncations of the check's own samples where the tool's output says how much of it
there is. Record-based and small-program checks are fed the same inputs as their output text.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.result import Verdict
from tests import sample_index
from tests.paths import REPO
from tests.profiles import shipped

PROFILE = shipped()
CHECKS = sorted(ALL_CHECKS)

# Which samples are each check's own tool output, by name: the sample index's files of the tools
# the check reads, and of its rows naming the check (tests/sample_index.py). A name in both
# sample directories is the same file (the lab copies the corpus's verbatim).
OWN: dict[str, set[str]] = {check: {Path(f).name for f in sample_index.own_files(check)} for check in CHECKS}


def _text(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    first, _, rest = text.partition("\n")
    return rest if first.startswith("# SOURCE:") else text


SAMPLES = {Path(file).name: _text(REPO / file) for file in sample_index.sample_files()}


def _verdict(check: str, text: str) -> Verdict:
    return judge(ALL_CHECKS[check], CommandOutput(stdout=text), PROFILE).verdict


def test_every_check_has_samples_of_its_own() -> None:
    """Otherwise its own output's cuts below are never tried (tests/unit/test_sample_index.py asks
    more: a PASS and a FAIL)."""
    assert [check for check in CHECKS if not OWN[check]] == []


@pytest.mark.parametrize("check", CHECKS)
def test_no_check_passes_another_tools_sample(check: str) -> None:
    foreign = [name for name in SAMPLES if name not in OWN[check]]
    passed = [name for name in foreign if _verdict(check, SAMPLES[name]) is Verdict.PASS]
    assert passed == [], f"{check} passes other tools' output: {passed}"


robust = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@robust
@given(check=st.sampled_from(CHECKS), text=st.text(max_size=600))
def test_no_check_passes_random_text(check: str, text: str) -> None:
    assert _verdict(check, text) is not Verdict.PASS, (check, text)


@robust
@given(check=st.sampled_from(CHECKS), data=st.binary(max_size=600))
def test_no_check_passes_random_bytes(check: str, data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    assert _verdict(check, text) is not Verdict.PASS, (check, data)


@robust
@given(
    check=st.sampled_from(CHECKS), lines=st.lists(st.sampled_from(sorted(SAMPLES)), min_size=1, max_size=3)
)
def test_no_check_passes_lines_mixed_from_other_tools(check: str, lines: list[str]) -> None:
    """Other tools' outputs run together, as a confused node or a wrong command would print."""
    foreign = [n for n in lines if n not in OWN[check]]
    text = "".join(SAMPLES[n] if SAMPLES[n].endswith("\n") else SAMPLES[n] + "\n" for n in foreign)
    if text.strip():
        assert _verdict(check, text) is not Verdict.PASS, (check, foreign)


# Outputs with no end and no count: a cut at a line end is a shorter, whole output (a kernel log
# is whatever the ring buffer holds; df lists the mounts there are). judge refuses a cut mid-line.
NO_END = {"kernel_log", "disk_usage"}
OWN_SAMPLES = sorted(
    (check, name) for check in CHECKS if check not in NO_END for name in SAMPLES if name in OWN[check]
)
# Known to pass cut: none (pcie_links refuses an output that ends before its 'after' and kernel
# sections, burnin/checks/pcie.py). Strict: an entry here says so once the check refuses it.
CUT_PASSES: dict[tuple[str, str], str] = {}


def judged_part(name: str, lines: list[str]) -> int:
    """How many lines of a sample the check reads: an `nvidia-smi -q` block's last section the
    checks read comes before 'Processes' (then the process list, capabilities), and a full
    block always prints 'Processes' (burnin/parsers/nvidia_smi.py), so a cut is seen up to
    there; after it, the verdict rests on everything the checks read. The gpu_stress output's
    throttle section is the sampler's rows until it is killed at the end of the load
    (burnin/checks/gpu.py): a series with no end, a cut in it a shorter series; its first row
    ends the part a cut shows in."""
    if name.startswith("nvidia_smi_q_"):
        marks = [i for i, line in enumerate(lines) if line.startswith("    Processes")]
        if marks:
            return marks[-1]
    if "@@burnin-section throttle\n" in lines:
        return lines.index("@@burnin-section throttle\n") + 2
    return len(lines)


@robust
@given(
    case=st.sampled_from([c for c in OWN_SAMPLES if c not in CUT_PASSES]),
    cut=st.floats(min_value=0.0, max_value=1.0),
)
def test_no_check_passes_its_own_output_cut_at_a_line_end(case: tuple[str, str], cut: float) -> None:
    check, name = case
    lines = SAMPLES[name].splitlines(keepends=True)
    while lines and not lines[-1].strip():
        lines.pop()  # trailing blank lines: dropping them cuts nothing
    end = int(judged_part(name, lines) * cut)
    if end >= len(lines):
        return
    text = "".join(lines[:end])
    assert _verdict(check, text) is not Verdict.PASS, (check, name, end, text[-200:])


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id="-".join(c), marks=[pytest.mark.xfail(strict=True, reason=CUT_PASSES[c])])
        if c in CUT_PASSES
        else pytest.param(c, id="-".join(c))
        for c in OWN_SAMPLES
    ],
)
def test_no_check_passes_its_own_output_cut_at_any_line_end(case: tuple[str, str]) -> None:
    """The same, over each of the check's own samples (every line end, or 60 spread over a long one)."""
    check, name = case
    lines = SAMPLES[name].splitlines(keepends=True)
    while lines and not lines[-1].strip():
        lines.pop()
    part = judged_part(name, lines)
    ends = range(0, part, max(1, part // 60))  # every line of a short sample, 60 cuts of a long one
    passed = [end for end in ends if _verdict(check, "".join(lines[:end])) is Verdict.PASS]
    assert passed == [], f"{check} passes {name} cut after these many lines: {passed[:10]}"


ODD_NUMBERS = ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1", "0", "9" * 400, "1_000"]


@pytest.mark.parametrize("check", CHECKS)
def test_no_check_passes_a_bare_odd_number(check: str) -> None:
    """What float() accepts but no tool prints alone ('nan' compares false with every bound)."""
    now = 1_795_000_000.0
    for text in ODD_NUMBERS:
        out = CommandOutput(stdout=f"{text}\n", started_at=now, finished_at=now + 0.1)
        assert judge(ALL_CHECKS[check], out, PROFILE).verdict is not Verdict.PASS, (check, text)
