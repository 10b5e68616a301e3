"""amd_xgmi_links: the edges the samples (index.tsv rows of amd_xgmi_links) do not show."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides, load_profile
from burnin.checks.base import CommandOutput, judge
from burnin.checks.gpu_amd_xgmi import AmdXgmiLinks
from burnin.result import Action, Verdict
from tests.profiles import SHIPPED_DIR
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
    assert command.splitlines()[0] == "amd-smi xgmi" and "amd-smi topology" in command
