"""`burnin evaluate` without --check: no input that is not a recognisable output of a
tool gets PASS, the evidence-only checks refuse other tools' outputs as the stage checks do, and
the command (click's runner) says which tool it recognised, reads stdin, and answers a binary
file UNKNOWN (in --json too), never a traceback."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.evidence import EVIDENCE_CHECKS
from burnin.cli import main
from burnin.evaluate.handed_in import evaluate_text
from burnin.evaluate.recognise import recognise
from burnin.result import Verdict
from tests import sample_index
from tests.paths import REPO
from tests.profiles import shipped
from tests.unit.burnin.checks.test_no_foreign_pass import SAMPLES
from tests.unit.burnin.evaluate.test_recognise import readers_of

PROFILE = shipped()
robust = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Which samples are each evidence-only check's own tool output, by name (the sample index's).
OWN = {check: {Path(f).name for f in sample_index.own_files(check)} for check in EVIDENCE_CHECKS}


def test_every_evidence_check_has_samples_of_its_own() -> None:
    assert [check for check in sorted(EVIDENCE_CHECKS) if not OWN[check]] == []


@pytest.mark.parametrize("check", sorted(EVIDENCE_CHECKS))
def test_an_evidence_checks_own_samples_are_those_of_the_tools_it_reads(check: str) -> None:
    """OWN agrees with the check's declaration (Check.reads): each of its own samples is
    recognised as a tool it reads (or as no tool: a reference text), and each sample recognised
    as a tool it reads is its own."""
    reads = EVIDENCE_CHECKS[check].reads
    own = {name for name in SAMPLES if name in OWN[check]}
    # a row may hand a check one section of another tool's file (the stress load's throttle rows
    # are the sampler's --query-gpu CSV): the index names the check for it
    named = {Path(r.file).name for r in sample_index.rows_of_check(check)}
    tools = _recognised_tools()
    assert reads and own
    assert sorted(n for n in own - named if tools[n] not in (None, *reads)) == []
    assert sorted(n for n in SAMPLES if tools[n] in reads and n not in own) == []


@cache
def _recognised_tools() -> dict[str, str | None]:
    return {name: (r.tool.name if (r := recognise(text)).tool else None) for name, text in SAMPLES.items()}


@pytest.mark.parametrize("check", sorted(EVIDENCE_CHECKS))
def test_no_evidence_check_passes_another_tools_sample(check: str) -> None:
    foreign = [name for name in SAMPLES if name not in OWN[check]]
    text = {n: SAMPLES[n] if SAMPLES[n].endswith("\n") else SAMPLES[n] + "\n" for n in foreign}
    passed = [
        n
        for n in foreign
        if judge(EVIDENCE_CHECKS[check], CommandOutput(text[n]), PROFILE).verdict is Verdict.PASS
    ]
    assert passed == [], f"{check} passes other tools' output: {passed}"


@robust
@given(check=st.sampled_from(sorted(EVIDENCE_CHECKS)), text=st.text(max_size=600))
def test_no_evidence_check_passes_random_text(check: str, text: str) -> None:
    out = CommandOutput(text if text.endswith("\n") else text + "\n")
    assert judge(EVIDENCE_CHECKS[check], out, PROFILE).verdict is not Verdict.PASS, (check, text)


@pytest.mark.parametrize("state", ["active", "inactive"])
def test_a_lone_unit_state_names_no_unit_so_only_check_judges_it(state: str) -> None:
    """'active' is what `systemctl is-active` prints for any unit (the property test below drew
    it): without --check it is not the fabric manager's answer, and it neither passes nor fails."""
    evaluation = evaluate_text(f"{state}\n", PROFILE)
    assert evaluation.tool == "systemctl is-active" and evaluation.verdict is Verdict.UNKNOWN
    assert "--check fabric_manager" in evaluation.reason
    given = evaluate_text(f"{state}\n", PROFILE, "fabric_manager")
    assert given.verdict is (Verdict.PASS if state == "active" else Verdict.FAIL)


@robust
@given(text=st.text(max_size=800))
def test_random_text_never_passes_evaluate(text: str) -> None:
    """The issue's defect: kernel_log passed random base64. Without --check, nothing is assumed."""
    for candidate in (text, text + "\n"):
        assert evaluate_text(candidate, PROFILE).verdict is not Verdict.PASS, candidate


@robust
@given(names=st.lists(st.sampled_from(sorted(SAMPLES)), min_size=2, max_size=3, unique=True))
def test_outputs_of_different_tools_run_together_never_pass(names: list[str]) -> None:
    """Two or three tools' outputs in one file: one tool's output is not all of it."""
    parts = [recognise(SAMPLES[n]) for n in names]
    if any(p.tool is None or p.candidates[0].strongest < 3 for p in parts) or len(
        {p.tool for p in parts}
    ) < len(names):
        # an unrecognised part (judged alone elsewhere); a part without a line only its tool prints
        # (`active`, `GPU 0: ... (UUID: ...)`) cannot be told from noise; two captures of one tool
        return
    tools = {p.tool for p in parts}
    if any(a.name in b.includes for a in tools for b in tools if a is not b):
        # one tool prints the other's lines (the cpu_throttle script runs stress-ng, gpu-burn prints
        # nvidia-smi -L): the included output cannot be told from the includer's own (evaluate.py)
        return
    text = "".join(SAMPLES[n] if SAMPLES[n].endswith("\n") else SAMPLES[n] + "\n" for n in names)
    evaluation = evaluate_text(text, PROFILE)
    assert evaluation.verdict is not Verdict.PASS, (names, evaluation.tool, evaluation.reason)


def test_base64_is_not_a_clean_kernel_log() -> None:
    text = "aGVsbG8gd29ybGQsIHRoaXMgaXMgYmFzZTY0IGFuZCBub3QgYSBrZXJuZWwgbG9n\n" * 20
    evaluation = evaluate_text(text, PROFILE)
    assert evaluation.verdict is Verdict.UNKNOWN and evaluation.reason.startswith("not recognised")


# ---- the command ---------------------------------------------------------------------------------


def _run(*args: str, stdin: bytes | None = None):
    base = ["--inventory-dir", str(REPO / "inventories"), "evaluate", "--profile", "h100-sxm-8x400g"]
    return CliRunner().invoke(main, [*base, *args], input=stdin)


def _sample(tmp_path: Path, name: str) -> Path:
    saved = tmp_path / name
    saved.write_text(SAMPLES[name], encoding="utf-8")
    return saved


def test_cli_recognises_the_tool_and_says_so(tmp_path: Path) -> None:
    saved = _sample(tmp_path, "lspci_vv_cx7_downtrained_16gt_x8.txt")
    res = _run(str(saved))
    assert res.exit_code == 1, res.output
    assert "tool: lspci -vv (confidence 1.00: 'LnkSta:' lines" in res.stdout
    assert "pcie_lspci: FAIL" in res.stdout and "link is x8, expected x16" in res.stdout


def test_cli_json_has_check_tool_confidence_verdict_findings_at_the_top(tmp_path: Path) -> None:
    saved = _sample(tmp_path, "nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt")
    res = _run("--json", str(saved))
    doc = json.loads(res.stdout)
    assert {"check", "tool", "confidence", "verdict", "findings"} <= set(doc)
    assert (doc["check"], doc["tool"], doc["verdict"]) == ("nccl_tests", "nccl-tests", "FAIL")
    assert doc["results"][0]["metrics"]["floor"] == "multi-node (2 nodes)"
    assert any("below the floor 360" in f["message"] and f["check"] == "nccl_tests" for f in doc["findings"])
    assert res.exit_code == 1


def test_cli_reads_stdin() -> None:
    res = _run("--json", "-", stdin=SAMPLES["nvidia_smi_q_8xh100_535_183.txt"].encode())
    doc = json.loads(res.stdout)
    assert doc["tool"] == "nvidia-smi -q" and doc["verdict"] == "PASS" and res.exit_code == 0
    assert doc["check"] == list(readers_of("nvidia-smi -q"))
    assert {"gpu_inventory", "gpu_ecc", "gpu_memory", "gpu_versions"} <= set(doc["check"])


def test_cli_unrecognised_file_is_unknown(tmp_path: Path) -> None:
    saved = tmp_path / "notes.txt"
    saved.write_text("aGVsbG8gd29ybGQ=\n")
    res = _run(str(saved))
    assert res.exit_code == 1
    assert "not recognised: looks like none of" in res.stdout and "UNKNOWN" in res.stdout


def test_cli_answers_a_binary_file_unknown(tmp_path: Path) -> None:
    """Garbage or binary input is UNKNOWN, never a traceback; --json prints its document."""
    saved = tmp_path / "core.bin"
    saved.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 4)
    res = _run(str(saved))
    assert res.exit_code == 1
    assert "UNKNOWN" in res.output
    assert "binary file" in res.output and str(saved) in res.output.replace("\n", "")
    assert "Traceback" not in res.output and res.exception is None or isinstance(res.exception, SystemExit)
    res = _run("--json", str(saved))
    doc = json.loads(res.stdout)
    assert (doc["verdict"], doc["tool"], doc["check"], doc["findings"]) == ("UNKNOWN", None, [], [])
    assert "binary file" in doc["reason"] and str(saved) in doc["reason"]
    assert res.exit_code == 1
    doc = json.loads(_run("--json", "--check", "kernel_log", str(saved)).stdout)
    assert (doc["verdict"], doc["check"], doc["check_given"]) == ("UNKNOWN", "kernel_log", True)
    assert "binary file" in doc["reason"]


def test_cli_with_check_judges_with_that_check(tmp_path: Path) -> None:
    saved = _sample(tmp_path, "ibstat_h100_ndr_all_active.txt")
    res = _run("--check", "kernel_log", "--json", str(saved))
    doc = json.loads(res.stdout)
    assert (doc["check"], doc["check_given"], doc["tool"], doc["verdict"]) == (
        "kernel_log",
        True,
        "ibstat",
        "UNKNOWN",
    )


def test_cli_unknown_check_is_an_error_listing_the_checks(tmp_path: Path) -> None:
    saved = _sample(tmp_path, "ibstat_h100_ndr_all_active.txt")
    res = _run("--check", "nope", str(saved))
    assert res.exit_code == 1 and "unknown check 'nope'" in res.output and "perftest_bw" in res.output


# ---- the issue's defects, through the command (each failed on the code before the fix) -----------


@pytest.mark.parametrize(
    ("name", "tool", "verdict"),
    [
        # "cannot judge nccl-tests or perftest output at all (no check takes them)"
        ("nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt", "nccl-tests", "FAIL"),
        ("perftest_ndr_cx7_client_send_read_write_bw.txt", "ib_write_bw / ib_read_bw (perftest)", "WARN"),
        ("ib_write_bw_out_json_ndr_cx7_DERIVED.json", "ib_write_bw / ib_read_bw (perftest)", "PASS"),
        # "answers UNKNOWN for lspci -vv ... and for nvidia-smi --query-gpu ... --format=csv"
        ("lspci_vv_cx7_downtrained_16gt_x8.txt", "lspci -vv", "FAIL"),
        ("lspci_vv_h100_gpu_gen5_x16_ok.txt", "lspci -vv", "PASS"),
        ("nvidia_smi_query_gpu_pcie_link_csv_8xl40s_idle_gen1.txt", "nvidia-smi --query-gpu CSV", "FAIL"),
        (
            "nvidia_smi_query_throttle_8xh100_load_gpu5_hw_slowdown_DERIVED.txt",
            "nvidia-smi --query-gpu CSV",
            "FAIL",
        ),
    ],
)
def test_issue15_outputs_no_check_took_are_judged(tmp_path: Path, name: str, tool: str, verdict: str) -> None:
    res = _run("--json", str(_sample(tmp_path, name)))
    doc = json.loads(res.stdout)
    assert (doc["tool"], doc["verdict"]) == (tool, verdict), doc
    assert res.exit_code == (0 if verdict in ("PASS", "WARN") else 1)


def test_issue15_random_base64_is_not_passed_as_a_clean_kernel_log(tmp_path: Path) -> None:
    """ "answers PASS for kernel_log on a file of random base64 text": without --check, nothing
    takes it for a log."""
    saved = tmp_path / "pasted.txt"
    saved.write_text("aGVsbG8gd29ybGQsIHRoaXMgaXMgYmFzZTY0IGFuZCBub3QgYSBrZXJuZWwgbG9n\n" * 40)
    doc = json.loads(_run("--json", str(saved)).stdout)
    assert doc["verdict"] == "UNKNOWN" and doc["tool"] is None and doc["check"] == []


def test_a_long_output_is_recognised_from_its_head_and_tail() -> None:
    """Recognition reads a long text's first 1 MiB and last 256 KiB (burnin.evaluate.recognise.HEAD_CHARS)."""
    dmesg = SAMPLES["dmesg_boot_mlx5_pcie_bw_nvswitch_h100.txt"]
    long_log = dmesg * (3 * (1 << 20) // len(dmesg) + 1)
    assert recognise(long_log).tool.name == "dmesg / journalctl -k"
    ibstat = SAMPLES["ibstat_h100_ndr_all_active.txt"]
    both = long_log + ibstat  # another tool's output at the end is still seen
    assert "ibstat" in recognise(both).reason  # here: as likely as the kernel log, ambiguous
    assert evaluate_text(both, PROFILE).verdict is not Verdict.PASS


def test_burnin_checks_lists_the_checks_only_evaluate_applies() -> None:
    res = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["--inventory-dir", str(REPO / "inventories"), "checks"]
    )
    assert res.exit_code == 0, res.output
    rows = [line for line in res.stdout.splitlines() if "(evaluate)" in line]
    assert sorted(name for name in EVIDENCE_CHECKS if any(name in row for row in rows)) == sorted(
        EVIDENCE_CHECKS
    )


def test_a_bare_stress_report_is_judged_by_gpu_stress_named_or_not() -> None:
    """burnin-stress's report as saved from a node (no @@burnin-section line) is the stress section."""
    report = SAMPLES["burnin_stress_8xh100_gpu6_sdc_SYNTHETIC.json"]
    for check in (None, "gpu_stress"):
        evaluation = evaluate_text(report, PROFILE, check)
        assert evaluation.verdict is Verdict.FAIL, evaluation.to_dict()
        assert any("silent data corruption" in f["message"] for f in evaluation.findings())


# ---- --format=csv,noheader rows without --check -----------------------------------------

# Rows of common --query-gpu fields as nvidia-smi prints them with noheader (units or nounits).
NOHEADER = {
    "pcie link, nounits": "0, 4, 4, 16, 16\n1, 4, 4, 16, 16\n2, 1, 4, 16, 16\n",
    "inventory": (
        "0, NVIDIA H100 80GB HBM3, GPU-4d8b0a4e-2b1c-5e7a-9c3f-0a1b2c3d4e5f, 00000000:18:00.0, 535.183.01\n"
        "1, NVIDIA H100 80GB HBM3, GPU-5e9c1b5f-3c2d-6f8b-ad40-1b2c3d4e5f60, 00000000:2A:00.0, 535.183.01\n"
    ),
    "readings with units": (
        "2024/05/01 12:00:00.123, 0, 33, 71.24 W, 0 MiB, 81559 MiB, 0 %, P0, [N/A]\n"
        "2024/05/01 12:00:00.125, 1, 31, 69.80 W, 0 MiB, 81559 MiB, 0 %, P0, [N/A]\n"
    ),
}
# Rows pasted under their command line: the columns are the command's --query-gpu fields.
PASTED_UNDER_COMMAND = (
    "$ nvidia-smi --query-gpu=index,persistence_mode,ecc.mode.current,temperature.gpu "
    "--format=csv,noheader\n0, Enabled, Enabled, 34\n1, Enabled, Enabled, 35\n"
)


@pytest.mark.parametrize("case", sorted(NOHEADER))
def test_noheader_rows_are_recognised_as_the_query_gpu_csv_with_low_confidence(case: str) -> None:
    text = NOHEADER[case]
    got = recognise(text)
    assert got.tool is not None and got.tool.name == "nvidia-smi --query-gpu CSV", got.reason
    assert got.confidence < 1 and "no header" in got.reason
    evaluation = evaluate_text(text, PROFILE)
    named = evaluate_text(text, PROFILE, "gpu_query_csv")
    assert evaluation.verdict is Verdict.UNKNOWN and evaluation.checks == ("gpu_query_csv",)
    assert evaluation.reason == named.reason and "without its header" in evaluation.reason


def test_noheader_rows_under_their_command_line_are_judged_by_its_fields() -> None:
    assert recognise(PASTED_UNDER_COMMAND).tool.name == "nvidia-smi --query-gpu CSV"
    evaluation = evaluate_text(PASTED_UNDER_COMMAND, PROFILE)
    assert evaluation.verdict is Verdict.FAIL  # two GPUs listed on an 8-GPU profile
    assert [f["message"] for f in evaluation.findings()] == ["the CSV lists 2 GPU(s), the profile has 8"]
    two = apply_overrides(PROFILE, ["gpu.count=2"])
    assert evaluate_text(PASTED_UNDER_COMMAND, two).verdict is Verdict.PASS
    disabled = PASTED_UNDER_COMMAND.replace("1, Enabled, Enabled", "1, Enabled, Disabled")
    assert evaluate_text(disabled, two).verdict is Verdict.FAIL


def test_cli_noheader_rows_without_check_say_run_it_with_a_header(tmp_path: Path) -> None:
    saved = tmp_path / "query.csv"
    saved.write_text(NOHEADER["inventory"])
    res = _run("--json", str(saved))
    doc = json.loads(res.stdout)
    assert (doc["tool"], doc["check"], doc["verdict"]) == (
        "nvidia-smi --query-gpu CSV",
        "gpu_query_csv",
        "UNKNOWN",
    )
    assert "run it with --format=csv" in doc["reason"] and doc["confidence"] < 1
    assert res.exit_code == 1


@pytest.mark.parametrize(
    "text",
    [
        "0, 4, 4, 16, 16\n",  # one row: too little to tell
        "0, 4, 4, 16, 16\n1, 4, 16, 16\n",  # rows of different widths
        "apples, pears, plums\ncherries, figs, dates\n",  # words, not values
        "1, 2, buckle my shoe\n3, 4, knock at the door\n",  # a field no query prints
        "Dear team, the node is down, again.\nRegards, ops\n",
        "42\n43\n44\n",  # one field: not a CSV
    ],
)
def test_text_with_commas_is_not_taken_for_noheader_rows(text: str) -> None:
    got = recognise(text)
    assert got.tool is None or got.tool.name != "nvidia-smi --query-gpu CSV", (text, got.reason)


@robust
@given(text=st.text(max_size=600))
def test_random_text_is_not_taken_for_a_query_gpu_csv(text: str) -> None:
    got = recognise(text)
    assert got.tool is None or got.tool.name != "nvidia-smi --query-gpu CSV", (text, got.reason)
