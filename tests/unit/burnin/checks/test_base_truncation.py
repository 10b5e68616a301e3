"""An output is cut when its structure is incomplete, not when its last byte is not a newline
(burnin/checks/base.py ``judge``, docs/burnin.md "A cut output").

A complete tool output saved without its final newline (an operator's paste, a ticket attachment)
is judged as the output it is: a FAIL it shows must not hide behind "cut short".
"""

from __future__ import annotations

import functools

import pytest

from bringup.profiles.load import Profile, apply_overrides, load_profile
from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.evaluate.handed_in import evaluate_text, judging_checks
from burnin.result import Verdict
from tests import sample_index
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.checks.test_no_foreign_pass import judged_part

PROFILE = shipped()  # h100-sxm-8x400g: 8 H100 80GB HBM3, 400 Gb/s InfiniBand
STANDINS = REPO / "bringup" / "lab" / "standins" / "samples"


def _sample(name: str) -> str:
    return (STANDINS / name).read_text(encoding="utf-8").split("\n", 1)[1]


def _verdict(check: str, text: str) -> Verdict:
    return judge(ALL_CHECKS[check], CommandOutput(stdout=text), PROFILE).verdict


def test_an_ibstat_at_200g_on_a_400g_profile_fails_without_its_final_newline() -> None:
    text = _sample("ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt").replace("Rate: 400", "Rate: 200")
    assert "Rate: 200" in text and text.endswith("\n")
    assert _verdict("ib_ports", text) is Verdict.FAIL
    assert _verdict("ib_ports", text.rstrip("\n")) is Verdict.FAIL


def test_eight_rtx_4090s_on_an_h100_profile_fail_without_the_final_newline() -> None:
    text = _sample("nvidia_smi_q_8xh100_535_183.txt").replace(
        "NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"
    )
    assert text.count("NVIDIA GeForce RTX 4090") == 8
    assert _verdict("gpu_inventory", text) is Verdict.FAIL
    assert _verdict("gpu_inventory", text.rstrip("\n")) is Verdict.FAIL


# -- the properties, over every sample of every check (tests/sample_index.py) ----------------------

ROWS = sample_index.check_rows()
CHECKS = judging_checks()


@functools.cache
def _profile(name: str, overrides: tuple[str, ...]) -> Profile:
    profile, problems = load_profile(name, REPO / "inventories" / "profiles")
    assert profile is not None, problems
    return apply_overrides(profile, overrides)


def _judged(row: sample_index.Row, text: str) -> Verdict:
    output = CommandOutput(stdout=text, **row.run_fields())
    return judge(CHECKS[row.check], output, _profile(row.profile, row.overrides)).verdict


@functools.cache
def _whole(row: sample_index.Row) -> Verdict:
    return _judged(row, row.output())


# The samples captured without their final newline (the corpus keeps some as the field pasted
# them) are judged as they are by test_samples; here, those that have one to remove.
WITH_NEWLINE = [r for r in ROWS if r.output().endswith("\n")]


def test_most_samples_end_with_their_newline() -> None:
    assert len(WITH_NEWLINE) > 0.9 * len(ROWS)


@pytest.mark.parametrize("row", WITH_NEWLINE, ids=[r.id() for r in WITH_NEWLINE])
def test_removing_the_final_newline_keeps_the_verdict(row: sample_index.Row) -> None:
    text = row.output()
    assert _judged(row, text.rstrip("\n")) is _whole(row)


def _lines(row: sample_index.Row) -> list[str]:
    lines = row.output().splitlines(keepends=True)
    while lines and not lines[-1].strip():
        lines.pop()  # trailing blank lines: dropping them cuts nothing
    return lines


# Outputs that list blocks with no count and no end of their own (ibstat lists the CAs there are,
# nvidia-smi -L a line a GPU, a --query-gpu CSV a row a GPU): whole before each block, where a cut
# is a shorter whole list (judged on its count: never a pass on a count the profile does not have).
WHOLE_BEFORE = {"ibstat": "CA '", "nvidia-smi -L": "GPU ", "nvidia-smi --query-gpu CSV": ""}


def _cuts(row: sample_index.Row) -> list[tuple[int, str]]:
    """(line, cut text): the sample cut at line ends and in the middle of lines, within the part
    its check reads (test_no_foreign_pass.judged_part); every line of a short sample, 40 of a long
    one."""
    lines = _lines(row)
    part = judged_part(row.name, lines)
    out = []
    for end in range(0, part, max(1, part // 40)):
        head = "".join(lines[:end])
        block = WHOLE_BEFORE.get(row.tool or "")
        if not (block is not None and end and lines[end].startswith(block)):
            out.append((end, head))
        line = lines[end].rstrip("\r\n")
        if len(line) > 1:  # a one-character line has no middle
            out.append((end, head + line[: len(line) // 2]))
    return out


STRUCTURED = [r for r in ROWS if not CHECKS[r.check].whole_at_line_ends]
NO_END = [r for r in ROWS if CHECKS[r.check].whole_at_line_ends]


def _wrong_cuts(row: sample_index.Row) -> list[tuple[int, str, str]]:
    allowed = {Verdict.UNKNOWN} | ({Verdict.FAIL} if _judged(row, row.output()) is Verdict.FAIL else set())
    return [
        (end, v.value, text[-80:]) for end, text in _cuts(row) if (v := _judged(row, text)) not in allowed
    ]


@pytest.mark.parametrize("row", STRUCTURED, ids=[r.id() for r in STRUCTURED])
def test_a_cut_inside_the_structure_is_unknown(row: sample_index.Row) -> None:
    """A FAIL may stand only where the whole sample fails too: what was kept showed it."""
    wrong = _wrong_cuts(row)
    assert wrong == [], f"{row.check} on {row.name} cut: {wrong[:5]}"


def test_the_cut_property_catches_a_parser_blind_to_its_structure(monkeypatch) -> None:
    """The property can fail: an ibstat parser that takes the CA blocks it finds (as ib_ports did
    before it refused a cut block) fails the sample cut inside its first CA as a missing HCA."""
    import burnin.parsers.ibstat as ibstat

    monkeypatch.setattr(ibstat, "_refuse_a_cut_block", lambda *args: None)
    row = next(r for r in STRUCTURED if r.check == "ib_ports" and r.verdict == "PASS")
    assert _wrong_cuts(row) != []


EVALUATE_ROWS = sample_index.evaluate_rows()


@pytest.mark.parametrize("row", EVALUATE_ROWS, ids=[r.id() for r in EVALUATE_ROWS])
def test_burnin_evaluate_gives_the_same_verdict_without_the_final_newline(row: sample_index.Row) -> None:
    profile = _profile(row.profile, row.overrides)
    text, rc = row.output(), row.run_fields()["rc"]
    whole = evaluate_text(text, profile, rc=rc).verdict
    assert evaluate_text(text.rstrip("\n"), profile, rc=rc).verdict is whole


@pytest.mark.parametrize("row", NO_END, ids=[r.id() for r in NO_END])
def test_a_partial_last_line_of_an_output_with_no_end_does_not_count(row: sample_index.Row) -> None:
    """Whole at any line end: a cut there is a shorter, whole output. A line cut in the middle can
    only make the verdict worse than that of the whole lines before it, never better, and fails
    only where the whole line fails too (a prefix of a failing line shows the failure)."""
    lines = _lines(row)
    wrong = []
    for end, text in _cuts(row):
        if text.endswith("\n") or not end:
            continue  # whole lines; or a first line, with nothing before it to be judged instead
        at_line_end = _judged(row, "".join(lines[:end]))
        verdict = _judged(row, text)
        with_line = _judged(row, "".join(lines[: end + 1]))
        misread = verdict is Verdict.FAIL and Verdict.FAIL not in (with_line, at_line_end)
        if verdict.rank < at_line_end.rank or misread:
            wrong.append((end, at_line_end.value, verdict.value, text[-80:]))
    assert wrong == [], f"{row.check} on {row.name}: {wrong[:5]}"
