"""`burnin evaluate` recognises every tool's output.

Every sample (tests/fixtures/samples and the lab's recordings) is recognised as its tool and
judged as the sample index (tests/fixtures/samples/index.tsv) says: its rows without a check are
what `burnin evaluate FILE` answers, the tool and the verdict against the row's profile with its
overrides (the hardware the capture came from). tests/unit/test_sample_index.py fails on a sample
without a row. Garbage, empty, binary and truncated inputs of every tool give UNKNOWN (or a clear
refusal) and never a traceback.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bringup.core.errors import BadInput
from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks import REGISTRY
from burnin.evaluate.handed_in import evaluate_evidence, evaluate_text, read_evidence
from burnin.evaluate.recognise import TOOLS, find_tool, recognise
from burnin.result import Verdict
from tests import sample_index
from tests.profiles import SHIPPED_DIR, shipped
from tests.unit.burnin.parsers._samples import SAMPLES_DIR

PROFILE = shipped()


def readers_of(tool: str) -> tuple[str, ...]:
    """The checks declaring they read a tool's output, in the order they are registered."""
    return tuple(c.name for c in REGISTRY if tool in c.reads)


EVALUATED = sample_index.evaluate_rows()


def load(name: str) -> str:
    """A sample's tool output: its '# SOURCE:' line stripped."""
    return sample_index.tool_output(SAMPLES_DIR / name)


def _files() -> set[str]:
    return {p.name for p in SAMPLES_DIR.iterdir() if p.is_file() and p.name not in sample_index.NOT_SAMPLES}


def test_every_sample_has_one_evaluate_row() -> None:
    """What `burnin evaluate FILE` answers is said once for every sample."""
    files = [row.file for row in EVALUATED]
    assert sorted(files) == sample_index.sample_files(), "samples without (or with two) evaluate rows"


# The shared sample corpus this directory copies (next to the checkout, as in the standins tests).
SHARED_SAMPLES = SAMPLES_DIR.parents[2].parent / "shared" / "samples"


@pytest.mark.skipif(not SHARED_SAMPLES.is_dir(), reason="shared sample corpus not present")
def test_every_sample_of_the_shared_corpus_is_here_verbatim() -> None:
    """So each is recognised and judged above: a sample added to the corpus fails here until it
    is copied, and then the index test until it has a row."""
    shared = {p.name for p in SHARED_SAMPLES.iterdir() if p.is_file() and p.name != "INDEX.md"}
    assert shared - _files() == set(), "shared samples not copied into tests/fixtures/samples"
    changed = [
        n for n in sorted(shared) if (SHARED_SAMPLES / n).read_bytes() != (SAMPLES_DIR / n).read_bytes()
    ]
    assert changed == [], "copies that differ from the shared corpus"


def _expecting_miss(what: str) -> list:
    """EVALUATED, a row the index marks as a known miss of `what` expected to fail (strict: the
    test fails once the product answers as labelled, and the marker is removed)."""
    return [
        pytest.param(
            row,
            id=row.id(),
            marks=[pytest.mark.xfail(strict=True, reason=f"known miss: {row.why[:120]}")]
            if what in row.known_miss
            else [],
        )
        for row in EVALUATED
    ]


@pytest.mark.parametrize("row", _expecting_miss("tool"))
def test_sample_is_recognised_as_its_tool(row: sample_index.Row) -> None:
    got = recognise(row.output())
    assert (got.tool.name if got.tool else None) == row.tool, (row.line, got.reason)
    if row.tool is not None:
        assert 0 < got.confidence <= 1 and got.reason


def profile_of(row: sample_index.Row):
    """The row's shipped profile, as `burnin evaluate --profile` loads it."""
    profile, problems = load_profile(row.profile, SHIPPED_DIR)
    assert profile is not None, (row.line, problems)
    return profile


@pytest.mark.parametrize("row", _expecting_miss("verdict"))
def test_sample_is_judged_as_the_index_says(row: sample_index.Row) -> None:
    evaluation = evaluate_text(row.output(), apply_overrides(profile_of(row), row.overrides))
    assert evaluation.verdict.value == row.verdict, (row.line, evaluation.to_dict())
    assert evaluation.tool == row.tool
    critical = {f["action"] for f in evaluation.findings() if f["severity"] == "critical"}
    assert critical == row.actions, (row.line, evaluation.to_dict())
    if row.verdict == "UNKNOWN":
        assert evaluation.reason  # it says why
    for result in evaluation.results:
        for finding in result.findings:
            assert finding.message, (row.file, finding)


def test_an_unrecognised_text_is_unknown_naming_the_tools() -> None:
    evaluation = evaluate_text("hello world\nthis is not a tool\n", PROFILE)
    assert evaluation.verdict is Verdict.UNKNOWN and evaluation.tool is None
    assert evaluation.reason.startswith("not recognised: looks like none of nvidia-smi -q")


def test_two_tools_equally_likely_are_ambiguous_and_unknown() -> None:
    text = (
        "# Port counters: Lid 1 port 1\nPortXmitData:.....5\n"
        "Infiniband device 'mlx5_0' port 1 status:\n\tphys state:\t5: LinkUp\n"
    )
    evaluation = evaluate_text(text, PROFILE)
    assert evaluation.verdict is Verdict.UNKNOWN
    assert evaluation.reason.startswith("ambiguous: looks like ")
    assert "perfquery" in evaluation.reason and "ibstatus" in evaluation.reason


def test_the_stronger_marker_wins_a_paste_of_two_tools() -> None:
    """lspci LnkCap/LnkSta lines with an nvidia-smi CSV under them (its row's why in the sample index)."""
    got = recognise(load("lspci_gpu_lnksta_downgraded_2_5gt_x8_with_nvsmi.txt"))
    assert got.tool is not None and got.tool.name == "lspci -vv"
    assert [c.tool.name for c in got.candidates] == ["lspci -vv", "nvidia-smi --query-gpu CSV"]
    assert got.confidence < 1


def test_nvidia_smi_q_is_judged_by_every_check_that_reads_it() -> None:
    evaluation = evaluate_text(load("nvidia_smi_q_8xh100_hw_power_brake_slowdown.txt"), PROFILE)
    assert evaluation.checks == readers_of("nvidia-smi -q")
    assert {"gpu_inventory", "gpu_ecc", "gpu_memory", "gpu_versions"} <= set(evaluation.checks)
    assert {f["check"] for f in evaluation.findings()} >= {"gpu_versions"}
    assert evaluation.to_dict()["check"] == list(evaluation.checks)


def test_a_check_named_judges_whatever_the_text_looks_like() -> None:
    evaluation = evaluate_text(load("ibstat_h100_ndr_all_active.txt"), PROFILE, "kernel_log")
    assert evaluation.given and evaluation.checks == ("kernel_log",)
    assert evaluation.verdict is Verdict.UNKNOWN and "kernel-log line" in evaluation.reason
    assert evaluation.tool == "ibstat"  # still said, so the operator sees the mismatch


def test_an_unknown_check_name_is_refused_listing_the_checks() -> None:
    with pytest.raises(BadInput, match=r"unknown check 'nope' \(checks: .*nccl_tests.*pcie_lspci"):
        evaluate_text("x\n", PROFILE, "nope")


# ---- garbage, empty, binary and truncated inputs of every tool -------------------------------


def _healthiest(tool: str) -> sample_index.Row | None:
    """A capture of the tool that passes (against the shipped profile if one does), else any; the
    shared corpus's before the lab's recordings; none the product misses today."""
    rows = [r for r in EVALUATED if r.tool == tool and not r.known_miss]
    return min(
        rows,
        key=lambda r: (r.verdict != "PASS", bool(r.overrides), not r.file.startswith("tests/"), r.file),
        default=None,
    )


# One real capture of each tool a check judges (a healthy one where there is one: cut, it must not pass).
REPRESENTATIVE = {t.name: row for t in TOOLS if t.checks and (row := _healthiest(t.name))}


def _capture(tool: str) -> str:
    return REPRESENTATIVE[tool].output()


JUDGED = sorted(REPRESENTATIVE)


def test_every_judged_tool_has_a_capture_here() -> None:
    """The PCIe collector's JSON is the judged tool with no capture of its own (this machine's is
    judged in checks/test_robust.py): the pcie_links samples hold burnin-stress's report in their
    stress section, and are recognised as burnin-stress's output."""
    missing = sorted(t.name for t in TOOLS if t.checks and t.name not in JUDGED)
    assert missing == ["burnin PCIe collector (sysfs)"]


@pytest.mark.parametrize("tool", JUDGED)
def test_empty_and_blank_inputs_are_unknown(tool: str) -> None:
    """Recognised as nothing, and judged by each of the tool's checks named (--check)."""
    for text in ("", "\n", "   \n\n"):
        assert evaluate_text(text, PROFILE).verdict is Verdict.UNKNOWN
        for check in find_tool(tool).checks:
            evaluation = evaluate_text(text, PROFILE, check)
            assert evaluation.verdict is Verdict.UNKNOWN and evaluation.reason, (tool, check, text)


def test_nccl_tests_wrong_elements_through_evaluate_fail_as_corruption() -> None:
    """A capture that passes a lower floor, with one size's #wrong set: data corruption, at any busbw."""
    text = load("nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt")
    profile = apply_overrides(PROFILE, ("floors.nccl_busbw_multi_node_gbps=80",))
    assert evaluate_text(text, profile).verdict is Verdict.PASS
    row = next(line for line in text.splitlines() if line.split()[:1] == ["1048576"])
    assert row.endswith("      0")
    evaluation = evaluate_text(text.replace(row, row[:-1] + "5"), profile)
    assert evaluation.tool == "nccl-tests" and evaluation.verdict is Verdict.FAIL
    assert any("#wrong" in f["message"] for f in evaluation.findings()), evaluation.findings()


@pytest.mark.parametrize("tool", JUDGED)
def test_a_capture_cut_mid_line_is_unknown(tool: str) -> None:
    """A tool with an end (WITH_AN_END below) cut mid-line is UNKNOWN; one with no end is whole at
    every line end, and the line cut in the middle cannot make it better than the lines before it
    (burnin/checks/base.py judge), or it is seen cut (UNKNOWN)."""
    text = _capture(tool).rstrip("\n")
    for fraction in (0.3, 0.6, 0.95):
        end = max(1, int(len(text) * fraction))
        while end > 1 and text[end - 1] == "\n":
            end -= 1
        evaluation = evaluate_text(text[:end], PROFILE)
        if tool in WITH_AN_END:
            assert evaluation.verdict is Verdict.UNKNOWN, (tool, end, evaluation.reason)
        else:
            whole_lines = evaluate_text(text[: text.rfind("\n", 0, end) + 1], PROFILE)
            verdict = evaluation.verdict
            assert verdict is Verdict.UNKNOWN or verdict.rank >= whole_lines.verdict.rank, (
                tool,
                end,
                evaluation.reason,
            )


# Outputs that say how much of them there is (a count, a footer, a summary, a closed table):
# their first lines then noise are cut outputs. A kernel log, df, lspci, perfquery, a CSV, the
# one-line outputs (ofed_info, systemctl, zpool status -x's 'all pools are healthy') have no end:
# their first lines are a shorter output.
WITH_AN_END = sorted(
    set(JUDGED)
    - {
        "dmesg / journalctl -k",
        "df -Pk",
        "lspci -vv",
        "perfquery",
        "nvidia-smi nvlink -e",  # GPU blocks, no count of them and no end
        "nvidia-smi --query-gpu CSV",
        "nvidia-smi -L",
        "nvidia-smi -q (Fabric excerpt)",  # a grep's lines: never a pass, whole at every line end
        "ofed_info -s",
        "systemctl is-active",
        "zpool status -x",
        # a log of several runs, each whole at its table's closing line (a cut inside a table is
        # UNKNOWN: test_evidence_checks.py, the -a sweep sample)
        "ib_write_bw / ib_read_bw (perftest)",
    }
)


@pytest.mark.parametrize("tool", WITH_AN_END)
def test_a_capture_cut_at_a_line_end_never_passes(tool: str) -> None:
    """Every line end of the capture (60 spread over a long one): a cut output of a tool that says
    how much of it there is, never a shorter healthy one. A cut that is whole output of another
    tool is that tool's (gpu-burn's first lines are `nvidia-smi -L` of the same GPUs)."""
    name = REPRESENTATIVE[tool].name
    profile = apply_overrides(PROFILE, REPRESENTATIVE[tool].overrides)
    lines = _capture(tool).splitlines(keepends=True)
    while lines and not lines[-1].strip():
        lines.pop()
    passed = []
    for end in range(1, len(lines), max(1, len(lines) // 60)):
        evaluation = evaluate_text("".join(lines[:end]), profile)
        if evaluation.verdict is Verdict.PASS and evaluation.tool == tool:
            passed.append(end)
    assert passed == [], f"{tool} ({name}) passes cut after {passed[:10]} lines"


@pytest.mark.parametrize("tool", JUDGED)
def test_a_capture_with_nul_bytes_is_unknown_as_binary(tool: str) -> None:
    data = _capture(tool).encode()
    data = data[:200] + b"\x00\x01\x02" + data[200:]
    for check in (None, *find_tool(tool).checks):
        evaluation = evaluate_evidence(data, PROFILE, source="f.txt", check_name=check)
        assert evaluation.verdict is Verdict.UNKNOWN and not evaluation.results
        assert evaluation.reason.startswith("f.txt: a binary file"), evaluation.reason
    with pytest.raises(BadInput, match="binary"):
        read_evidence(data, "f.txt")  # what is read as text is refused; the answer is UNKNOWN


def test_an_oversized_file_is_refused() -> None:
    from burnin.evaluate.handed_in import MAX_BYTES

    with pytest.raises(BadInput, match="over the 64 MiB limit"):
        read_evidence(b"a" * (MAX_BYTES + 1), "big.log")


robust = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@robust
@given(
    tool=st.sampled_from(WITH_AN_END),
    garbage=st.text(min_size=1, max_size=400).filter(str.strip),
    share=st.floats(0.05, 0.5),
)
def test_a_tools_first_lines_then_garbage_never_pass(tool: str, garbage: str, share: float) -> None:
    """The tool's own first lines (so it is recognised as that tool), then noise for the rest."""
    lines = _capture(tool).splitlines(keepends=True)
    head = "".join(lines[: max(1, int(len(lines) * share))])
    evaluation = evaluate_text(head + garbage + "\n", PROFILE)
    assert evaluation.verdict is not Verdict.PASS, (tool, share, garbage)


@robust
@given(data=st.binary(max_size=800))
def test_random_bytes_are_refused_or_never_pass(data: bytes) -> None:
    try:
        evaluation = evaluate_evidence(data, PROFILE, source="random.bin")
    except BadInput as exc:
        assert "random.bin" in str(exc)
        return
    assert evaluation.verdict is not Verdict.PASS, data


# The real Xid 79 line (dmesg_xid79_fallen_off_bus_crashdump.txt) under each of dmesg's and
# journalctl's time formats, three lines of it.
XID79 = "NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus."
TIME_FORMATS = {
    "dmesg": "[1084456.074562] {}",
    "dmesg -T": "[Sun Feb 23 16:24:18 2025] {}",
    "dmesg -H": "[  +0.000844] {}",
    "dmesg --time-format iso": "2025-01-17T15:36:26,128279+00:00 {}",
    "dmesg -x": "kern  :warn  : [1084456.074562] {}",
    "dmesg -r": "<4>[1084456.074562] {}",
    "journalctl -k": "Feb 23 16:24:18 node07 kernel: {}",
    "journalctl -k -o short-iso": "2025-02-23T16:24:18+0000 node07 kernel: {}",
    "journalctl -k -o cat": "kernel: {}",
}


@pytest.mark.parametrize("fmt", sorted(TIME_FORMATS))
def test_a_kernel_log_in_each_time_format_is_recognised_and_judged(fmt: str) -> None:
    text = "".join(TIME_FORMATS[fmt].format(XID79) + "\n" for _ in range(3))
    evaluation = evaluate_text(text, PROFILE)
    assert evaluation.tool == "dmesg / journalctl -k", (fmt, evaluation.reason)
    assert evaluation.verdict is Verdict.FAIL and "Xid 79" in evaluation.findings()[0]["message"]
