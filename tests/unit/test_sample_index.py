"""The sample index (tests/sample_index.py, tests/fixtures/samples/index.tsv): well formed, complete,
and every registered check judges samples of its own both ways.

The rows are judged elsewhere: the rows naming a check in tests/unit/burnin/checks/test_samples.py,
the `burnin evaluate` rows in tests/unit/burnin/evaluate/test_recognise.py.
"""

from __future__ import annotations

import pytest

from burnin import checks as checks_module
from burnin.checks import ALL_CHECKS
from burnin.checks.evidence import EVIDENCE_CHECKS
from burnin.evaluate.handed_in import judging_checks
from burnin.evaluate.recognise import tool_names
from tests import sample_index
from tests.paths import REPO

HEADER = "\t".join(sample_index.COLUMNS)
GOOD = "\t".join(
    [
        "tests/fixtures/samples/x.txt",
        "ibstat",
        "ib_ports",
        "h100-sxm-8x400g",
        "ib.rate_gbps=200",
        "",
        "FAIL",
        "RESEAT",
        "REAL",
        "a port down",
        "somewhere",
        "MIT",
    ]
)

# Checks that never FAIL, with the verdict their bad samples give instead.
NEVER_FAIL = {
    # A single read of the error counters says they rose since they were last cleared, not during
    # a load: warnings only (burnin/checks/ib_evidence.py); the ib stage judges the rise.
    "perfquery_counters": "WARN",
    # The same for a single `nvidia-smi nvlink -e`'s counters (burnin/checks/nvlink_evidence.py; only
    # nvidia-smi's own error answers fail it); burnin watch judges the rise.
    "nvlink_counters": "WARN",
}


def registered() -> list[str]:
    return sorted({*ALL_CHECKS, *EVIDENCE_CHECKS})


# ---- the index is well formed and complete ------------------------------------------------------


def test_every_sample_has_a_row_and_every_row_its_file() -> None:
    files = sample_index.sample_files()
    assert sorted(set(files) - set(sample_index.indexed_files())) == [], "samples without a row"
    missing = [r.file for r in sample_index.rows() if not r.path.is_file()]
    assert missing == [], "rows whose file is not there"
    assert len(files) > 150


def test_every_row_names_a_known_tool_check_and_profile() -> None:
    tools, checks = set(tool_names()), judging_checks()
    for row in sample_index.rows():
        assert row.tool is None or row.tool in tools, (row.line, row.tool)
        assert row.check is None or row.check in checks, (row.line, row.check)
        assert (REPO / "inventories" / "profiles" / f"{row.profile}.yml").is_file(), (row.line, row.profile)


def test_made_samples_say_so_in_their_name_and_row() -> None:
    """A SYNTHETIC (made here) or DERIVED (edited from a real one) sample is named so."""
    for row in sample_index.rows():
        assert (row.kind == "SYNTHETIC") == ("SYNTHETIC" in row.name), (row.line, row.kind)
        assert (row.kind == "DERIVED") == ("_DERIVED" in row.name), (row.line, row.kind)


def test_the_loader_offers_what_the_tests_need() -> None:
    assert {r.check for r in sample_index.rows_of_check("nvlink")} == {"nvlink"}
    assert "tests/fixtures/samples/ibstat_h100_ndr_all_active.txt" in sample_index.files_of_tool("ibstat")
    assert {r.tool for r in sample_index.rows_of_tool("ibstat")} == {"ibstat"}
    assert "tests/fixtures/samples/ibstat_h100_ndr_all_active.txt" in sample_index.own_files("ib_ports")
    assert sample_index.tools_judged_by("gpu_memory") == {
        "nvidia-smi -q",
        "nvidia-smi -q -x (XML)",
        "nvidia-smi -q -d",
    }


@pytest.mark.parametrize(
    ("line", "column", "message"),
    [
        (GOOD.replace("\tFAIL\t", "\tBROKEN\t"), 7, "'BROKEN' is not one of"),
        (GOOD.replace("RESEAT", "RESEAT;FIX"), 8, "unknown action(s) FIX"),
        (GOOD.replace("RESEAT", "RMA;RESEAT"), 8, "not sorted"),
        (GOOD.replace("\tFAIL\t", "\tPASS\t"), 8, "on a row that does not FAIL"),
        (GOOD.replace("ib.rate_gbps=200", "ib.rate_gbps"), 5, "not key=value"),
        (GOOD.replace("\t\tFAIL", "\tseconds=3\tFAIL"), 6, "unknown field 'seconds'"),
        (GOOD.replace("\t\tFAIL", "\tstarted_at=soon\tFAIL"), 6, "not a number"),
        (GOOD.replace("\tREAL\t", "\tGUESSED\t"), 9, "'GUESSED' is not one of"),
        (GOOD.replace("\tMIT", "\t"), 12, "empty"),
        (GOOD.replace("a port down", " a port down"), 10, "leading or trailing blanks"),
        (GOOD.rsplit("\t", 1)[0], 11, "11 columns, expected 12"),
        (GOOD.replace("tests/fixtures", "../fixtures"), 1, "not a path inside the repository"),
        (GOOD.replace("a port down", "KNOWN MISS: a port down"), 10, "a known miss begins"),
        (GOOD.replace("a port down", "KNOWN MISS (tool): a port down"), 10, "a known miss begins"),
        (GOOD.replace("a port down", "KNOWN MISS (speed, verdict): a port down"), 10, "a known miss begins"),
    ],
)
def test_a_malformed_row_names_the_file_line_and_column(line: str, column: int, message: str) -> None:
    text = f"# a comment\n{HEADER}\n{GOOD.replace('x.txt', 'y.txt')}\n{line}\n"
    with pytest.raises(sample_index.IndexError_) as caught:
        sample_index.parse(text, "index.tsv")
    assert str(caught.value).startswith(f"index.tsv:4: column {column} "), caught.value
    assert message in str(caught.value)


def test_a_file_told_two_ways_or_judged_twice_is_refused() -> None:
    other_tool = GOOD.replace("\tibstat\t", "\tibstatus\t").replace("ib.rate_gbps=200", "")
    with pytest.raises(
        sample_index.IndexError_, match=r"index.tsv:3: column 2 \(tool\): differs from line 2"
    ):
        sample_index.parse(f"{HEADER}\n{GOOD}\n{other_tool}\n", "index.tsv")
    with pytest.raises(sample_index.IndexError_, match=r"index.tsv:3: column 1 \(file\): the same judgement"):
        sample_index.parse(f"{HEADER}\n{GOOD}\n{GOOD}\n", "index.tsv")
    with pytest.raises(sample_index.IndexError_, match=r"index.tsv:1: column 1: the header must be"):
        sample_index.parse(f"{GOOD}\n", "index.tsv")


def test_a_known_miss_says_what_the_product_misses() -> None:
    """The sample tests expect these rows to fail (strict xfail): the marker says which."""
    marked = GOOD.replace(
        "a port down", "KNOWN MISS (tool, verdict): the product says UNKNOWN today. a port down"
    )
    (plain,) = sample_index.parse(f"{HEADER}\n{GOOD}\n", "index.tsv")
    (miss,) = sample_index.parse(f"{HEADER}\n{marked}\n", "index.tsv")
    assert plain.known_miss == frozenset()
    assert miss.known_miss == {"tool", "verdict"}
    verdict_only = marked.replace("(tool, verdict)", "(verdict)")
    assert sample_index.parse(f"{HEADER}\n{verdict_only}\n", "index.tsv")[0].known_miss == {"verdict"}


def test_the_index_parses_as_the_tests_read_it() -> None:
    rows = sample_index.rows()
    assert len(rows) == len(sample_index.parse(sample_index.INDEX.read_text(encoding="utf-8")))
    assert {r.verdict for r in rows} == set(sample_index.VERDICTS)


# ---- every registered check judges a PASS and a FAIL sample of its own --------------------------


def test_every_registered_check_judges_samples_of_its_own_pass_and_fail() -> None:
    """The index has, for every check, a sample it passes and one it fails (the rows naming it,
    or `burnin evaluate` rows of a tool it alone judges); those rows are judged as they say in
    test_samples.py and test_recognise.py."""
    assert sample_index.checks_lacking_samples(registered(), worst=NEVER_FAIL) == {}


def test_a_check_that_never_fails_is_so_in_the_index() -> None:
    """An exemption that a FAIL row would make stale, for a check still registered."""
    for check, worst in NEVER_FAIL.items():
        assert check in registered()
        shown = sample_index.verdicts_of_check(check)
        assert "FAIL" not in shown and worst in shown, (check, sorted(shown))


def test_the_property_reports_a_check_without_samples(monkeypatch) -> None:
    """It can fail: a check registered with no samples is named, with both verdicts it lacks."""
    monkeypatch.setitem(checks_module.ALL_CHECKS, "gpu_unsampled_state", ALL_CHECKS["nvlink"])
    lacking = sample_index.checks_lacking_samples(registered(), worst=NEVER_FAIL)
    assert lacking == {"gpu_unsampled_state": ["PASS", "FAIL"]}


def test_the_property_reports_a_check_whose_fail_samples_are_gone() -> None:
    index = [r for r in sample_index.rows() if not (r.verdict == "FAIL" and r.check == "nvlink")]
    index = [
        r for r in index if not (r.check is None and r.tool == "nvidia-smi nvlink -s" and r.verdict == "FAIL")
    ]
    assert sample_index.checks_lacking_samples(["nvlink", "kernel_log"], index) == {"nvlink": ["FAIL"]}
    # and the never-failing check without its exemption
    assert sample_index.checks_lacking_samples(["perfquery_counters"]) == {"perfquery_counters": ["FAIL"]}
