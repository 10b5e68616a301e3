"""amd_xgmi_links: the edges the samples (index.tsv rows of amd_xgmi_links) do not show."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu_amd_xgmi import AmdXgmiLinks
from burnin.result import Action, Severity, Verdict
from tests.profiles import SHIPPED_DIR
from tests.unit.burnin.checks.test_gpu_amd_fallback import _run, _tool
from tests.unit.burnin.parsers._samples import load

OK = load("amd_xgmi_links_8xmi300_ok_DERIVED.txt")
BDFS = [
    "0000:0c:00.0",
    "0000:22:00.0",
    "0000:38:00.0",
    "0000:5c:00.0",
    "0000:9f:00.0",
    "0000:af:00.0",
    "0000:bf:00.0",
    "0000:df:00.0",
]


def _mi300x(*overrides: str):
    profile, problems = load_profile("mi300x-8x400g", SHIPPED_DIR)
    assert profile is not None, problems
    return apply_overrides(profile, overrides)


def _link_types(cell) -> str:
    """The amd_xgmi_links output with each LINK TYPE cell given by cell(row, column)."""
    head, _, rest = OK.partition("LINK TYPE TABLE:\n")
    table, _, tail = rest.partition("\nNUMA BW TABLE:")
    lines = table.splitlines()
    rows = [f"{a} " + " ".join(cell(i, j) for j in range(8)) for i, a in enumerate(BDFS)]
    return head + "LINK TYPE TABLE:\n" + "\n".join([lines[0], *rows]) + "\nNUMA BW TABLE:" + tail


def test_the_real_outputs_joined_pass() -> None:
    assert judge(AmdXgmiLinks(), CommandOutput(OK), _mi300x()).verdict is Verdict.PASS


def test_a_gpu_with_every_link_down_is_named_alone() -> None:
    text = _link_types(lambda i, j: "SELF" if i == j else ("PCIE" if 4 in (i, j) else "XGMI"))
    result = judge(AmdXgmiLinks(), CommandOutput(text), _mi300x())
    assert result.verdict is Verdict.FAIL
    (finding,) = result.findings
    assert finding.subject == "GPU 4" and finding.action is Action.RESEAT and "7 peers" in finding.message


def test_peer_access_disabled_on_an_xgmi_pair_fails() -> None:
    text = OK.replace("0000:0c:00.0 ENABLED      ENABLED ", "0000:0c:00.0 ENABLED      DISABLED", 1)
    result = judge(AmdXgmiLinks(), CommandOutput(text), _mi300x())
    assert result.verdict is Verdict.FAIL
    assert [f.subject for f in result.findings] == ["GPU 0"] and "peer access DISABLED" in result.findings[
        0
    ].message


def test_a_rate_printed_na_cannot_pass_where_the_profile_judges_it() -> None:
    text = OK.replace("GPU6   0000:bf:00.0 32 Gb/s ", "GPU6   0000:bf:00.0 N/A     ", 1)
    assert "N/A" in text.splitlines()[7]
    result = judge(AmdXgmiLinks(), CommandOutput(text), _mi300x())
    assert result.verdict is Verdict.UNKNOWN and "GPU 6" in result.reason


def test_without_the_end_mark_it_cannot_pass() -> None:
    text = OK.replace("@@burnin-section end\n", "")
    assert judge(AmdXgmiLinks(), CommandOutput(text), _mi300x()).verdict is Verdict.UNKNOWN


def test_a_table_cut_short_is_unknown() -> None:
    cut = OK[: OK.index("0000:9f:00.0 XGMI")]
    assert judge(AmdXgmiLinks(), CommandOutput(cut), _mi300x()).verdict is Verdict.UNKNOWN


def test_fewer_gpus_than_the_profile_is_not_a_pass() -> None:
    result = judge(AmdXgmiLinks(), CommandOutput(OK), _mi300x("gpu.count=16"))
    assert result.verdict is Verdict.UNKNOWN and "the profile has 16" in result.reason


def test_one_gpu_has_no_links_to_judge() -> None:
    assert not AmdXgmiLinks().applies(_mi300x("gpu.count=1"))
    command = AmdXgmiLinks().command(_mi300x())
    assert command.index("$(amd-smi xgmi)") < command.index("$(amd-smi topology)")
    assert command.index("$(amd-smi topology)") < command.index("rocm-smi --showtopo")


# ---- the rocm-smi fallback: the command run under bash with stand-in tools on a PATH of their own ----

ROCM_OK = load("rocm_smi_showtopo_8xmi308x.txt")
ROCM_GPU5 = load("rocm_smi_showtopo_8xmi308x_gpu5_pcie_DERIVED.txt")
AMD_XGMI, _, AMD_TOPOLOGY = OK.removesuffix("@@burnin-section end\n").partition("@@burnin-section topology\n")


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    d = tmp_path / "bin"
    d.mkdir()
    return d


def _amd_smi(bin_dir: Path, xgmi: tuple[str, int], topology: tuple[str, int]) -> None:
    """An amd-smi answering `xgmi` and `topology` each with its own output and exit status."""
    script = bin_dir / "amd-smi"
    script.write_text(
        "#!/bin/bash\n"
        f'if [ "$1" = xgmi ]; then printf %s {shlex.quote(xgmi[0])}; exit {xgmi[1]}; fi\n'
        f'if [ "$1" = topology ]; then printf %s {shlex.quote(topology[0])}; exit {topology[1]}; fi\n'
        "exit 2\n"
    )
    script.chmod(0o755)


def test_amd_smi_answering_is_read_as_before_and_rocm_smi_never_run(bin_dir: Path) -> None:
    _amd_smi(bin_dir, (AMD_XGMI, 0), (AMD_TOPOLOGY, 0))
    _tool(bin_dir, "rocm-smi", "junk", rc=99)  # would fail the command were it run
    output, result = _run(AmdXgmiLinks(), bin_dir, _mi300x())
    assert output.rc == 0 and output.stdout == OK and result.verdict is Verdict.PASS


def test_amd_smis_pairs_stand_when_only_its_rates_fail(bin_dir: Path) -> None:
    """amd-smi xgmi failing (no rates) with amd-smi topology answering: amd-smi's pairs are judged,
    its missing rates keep the pass from showing, and rocm-smi is not run."""
    _amd_smi(bin_dir, ("", 1), (AMD_TOPOLOGY.replace("XGMI         SELF", "PCIE         SELF", 1), 0))
    _tool(bin_dir, "rocm-smi", "junk", rc=99)
    output, result = _run(AmdXgmiLinks(), bin_dir, _mi300x())
    assert output.rc == 1 and "rocm-smi" not in output.stdout
    assert result.verdict is Verdict.FAIL and [f.subject for f in result.findings] == ["GPU 0"]


def test_without_amd_smi_rocm_smis_link_types_pass_their_half_only(bin_dir: Path) -> None:
    _tool(bin_dir, "rocm-smi", ROCM_OK)
    output, result = _run(AmdXgmiLinks(), bin_dir, _mi300x())
    assert (
        "@@burnin-section no-amd-smi\namd-smi is not installed\n@@burnin-section rocm-smi\n" in output.stdout
    )
    assert result.verdict is Verdict.PASS
    assert result.not_covered == ("gpu.xgmi_bit_rate_gbps", "gpu.xgmi_max_bandwidth_gbps")
    (note,) = result.findings
    assert note.severity is Severity.INFO and "amd-smi is not installed" in note.message
    assert "no XGMI bit rate or bandwidth" in note.message and result.metrics["xgmi_pairs"] == 28


def test_amd_smi_topology_not_answering_falls_back_to_rocm_smi(bin_dir: Path) -> None:
    _amd_smi(bin_dir, (AMD_XGMI, 0), ("", 1))
    _tool(bin_dir, "rocm-smi", ROCM_GPU5)
    output, result = _run(AmdXgmiLinks(), bin_dir, _mi300x())
    assert "amd-smi topology exited 1 and printed nothing\n" in output.stdout
    assert result.verdict is Verdict.FAIL


def test_a_gpu_down_in_rocm_smi_is_named_as_amd_smi_names_it(bin_dir: Path) -> None:
    _tool(bin_dir, "rocm-smi", ROCM_GPU5)
    _, rocm = _run(AmdXgmiLinks(), bin_dir, _mi300x())
    amd = judge(
        AmdXgmiLinks(),
        CommandOutput(_link_types(lambda i, j: "SELF" if i == j else ("PCIE" if 5 in (i, j) else "XGMI"))),
        _mi300x(),
    )
    (down,) = [f for f in rocm.findings if f.severity is Severity.CRITICAL]
    (same,) = amd.findings
    assert (down.subject, down.action) == (same.subject, same.action) == ("GPU 5", Action.RESEAT)
    assert down.message == same.message.replace("GPU 5 (0000:af:00.0)", "GPU 5")
    assert down.evidence.startswith("GPU0 GPU5: link type PCIE")


def test_rocm_smi_cut_at_any_line_is_never_judged(bin_dir: Path) -> None:
    """rocm-smi's end line tells a whole log from a cut one: a cut log shows no pass and no failure,
    even the derived PCIE links (as amd_gpu_inventory and amd_gpu_ecc read rocm-smi)."""
    for text in (ROCM_OK, ROCM_GPU5):
        lines = text.splitlines(keepends=True)
        for end in range(len(lines)):
            stdout = f"@@burnin-section no-amd-smi\nwhy\n@@burnin-section rocm-smi\n{''.join(lines[:end])}"
            result = judge(AmdXgmiLinks(), CommandOutput(stdout), _mi300x())
            assert result.verdict is Verdict.UNKNOWN, (end, result.verdict)
            assert stdout.endswith("\n") and "amd-smi did not answer (why)" in result.reason


def _rocm_cells(cell) -> str:
    """ROCM_OK with each Link Type cell of GPU i and j (i != j) given by cell(i, j)."""
    head, _, rest = ROCM_OK.partition(" Link Type between two GPUs ")
    table, _, tail = rest.partition("\n\n")
    lines = table.splitlines()
    rows = [
        f"{f'GPU{i}':<6} " + "".join(f"{'0' if i == j else cell(i, j):<12} " for j in range(8))
        for i in range(8)
    ]
    return head + " Link Type between two GPUs " + "\n".join([lines[0], lines[1], *rows]) + "\n\n" + tail


def test_a_link_type_rocm_smi_could_not_read_is_no_pass() -> None:
    text = _rocm_cells(lambda i, j: "XXXX" if {i, j} == {3, 6} else "XGMI")
    result = judge(AmdXgmiLinks(), CommandOutput(text), _mi300x())
    assert result.verdict is Verdict.UNKNOWN and "GPU 3 - GPU 6" in result.reason
    failing = _rocm_cells(lambda i, j: "XXXX" if {i, j} == {3, 6} else "PCIE" if {i, j} == {0, 1} else "XGMI")
    assert judge(AmdXgmiLinks(), CommandOutput(failing), _mi300x()).verdict is Verdict.FAIL


def test_fewer_gpus_in_rocm_smi_than_the_profile_is_not_a_pass() -> None:
    result = judge(AmdXgmiLinks(), CommandOutput(ROCM_OK), _mi300x("gpu.count=16"))
    assert result.verdict is Verdict.UNKNOWN and "the profile has 16" in result.reason


def test_peer_access_false_in_a_handed_in_accessibility_table_fails() -> None:
    """`rocm-smi --showtopo --showtopoaccess`: its accessibility table judged as amd-smi's ACCESS."""
    cells = [["True" if {a, b} != {1, 4} else "False" for b in range(8)] for a in range(8)]
    table = ["=" * 25 + " Link accessibility between two GPUs " + "=" * 28]
    table.append("       " + "".join(f"{f'GPU{i}':<12} " for i in range(8)))
    table += [f"{f'GPU{i}':<6} " + "".join(f"{c:<12} " for c in row) for i, row in enumerate(cells)]
    text = ROCM_OK.replace(
        "\n=" + "=" * 38 + " Numa Nodes", "\n" + "\n".join(table) + "\n\n=" + "=" * 38 + " Numa Nodes"
    )
    assert "Link accessibility" in text
    result = judge(AmdXgmiLinks(), CommandOutput(text), _mi300x())
    assert result.verdict is Verdict.FAIL
    assert [f.subject for f in result.findings if f.severity is Severity.CRITICAL] == ["GPU 1"]
    assert (
        "peer access False" in result.findings[0].message
        and "nor peer access" not in result.findings[-1].message
    )


def test_neither_tool_is_unknown_naming_both(bin_dir: Path) -> None:
    output, result = _run(AmdXgmiLinks(), bin_dir, _mi300x())
    assert output.rc == 127 and result.verdict is Verdict.UNKNOWN
    assert "amd-smi is not installed" in result.reason and "rocm-smi is not installed" in result.reason
