"""Non-finite and absurd numbers in tool output are parse errors, never figures.

perftest's --out_json accepted `Infinity` and `1e999` as a bandwidth, which then passed the
floor. One helper in burnin/parsers/_common.py (``number``) reads every float the parsers take
from JSON or text; these tests go through the public parsers.
"""

from __future__ import annotations

import copy
import json

import pytest

from burnin.parsers import ParseError
from burnin.parsers._common import MAX_LINK_GBPS, number
from burnin.parsers.gpu_burn import parse_gpu_burn
from burnin.parsers.nccl_tests import parse_nccl_tests
from burnin.parsers.perftest import parse_perftest, parse_perftest_json
from tests.paths import REPO
from tests.unit.burnin.parsers.test_nccl_tests import JSON_DOC

STANDIN_JSON = REPO / "bringup/lab/standins/samples/ib_write_bw_out_json_ndr_cx7_DERIVED.json"


def _perftest_doc(bw: str) -> str:
    text = STANDIN_JSON.read_text().partition("\n")[2]
    return text.replace('"BW_average": 392.34', f'"BW_average": {bw}')


@pytest.mark.parametrize("bw", ["Infinity", "-Infinity", "NaN", "1e999", '"inf"', "1e9", "-5"])
def test_perftest_json_bandwidth_that_is_not_finite_or_absurd_is_a_parse_error(bw):
    with pytest.raises(ParseError) as exc:
        parse_perftest_json(_perftest_doc(bw))
    assert not exc.value.internal
    assert "BW_average" in str(exc.value) or "JSON holds" in str(exc.value)


def test_perftest_json_real_figure_still_reads():
    assert parse_perftest_json(_perftest_doc("392.34")).average_gbps() == pytest.approx(392.34)


def test_perftest_text_row_with_an_absurd_bandwidth_is_a_parse_error(sample):
    text = sample("perftest_ndr_cx7_client_send_read_write_bw.txt")
    bad = text.replace("392.34", "9e99", 1)
    assert bad != text
    with pytest.raises(ParseError) as exc:
        parse_perftest(bad)
    assert not exc.value.internal


@pytest.mark.parametrize("value", [float("inf"), 1e999, float("nan"), 1e9, -1.0])
def test_nccl_json_bus_bandwidth_that_is_not_finite_or_absurd_is_a_parse_error(value):
    doc = copy.deepcopy(JSON_DOC)
    doc["results"][1]["in_place"]["bus_bw"] = value
    with pytest.raises(ParseError) as exc:
        parse_nccl_tests(json.dumps(doc))
    assert not exc.value.internal


def test_nccl_text_row_with_infinite_bus_bandwidth_is_a_parse_error(sample):
    text = sample("nccl_tests_all_reduce_perf_8xa100_ok.txt")
    lines = text.splitlines(keepends=True)
    i = next(
        i for i, ln in enumerate(lines) if ln.split() and ln.split()[0].isdigit() and len(ln.split()) > 8
    )
    tokens = lines[i].split()
    tokens[7] = "inf"  # out-of-place busbw
    lines[i] = "  ".join(tokens) + "\n"
    with pytest.raises(ParseError) as exc:
        parse_nccl_tests("".join(lines))
    assert not exc.value.internal


def test_number_helper_bounds():
    assert number("392.34", "bw", maximum=MAX_LINK_GBPS) == pytest.approx(392.34)
    assert number(0, "count") == 0.0
    for bad in ("inf", "nan", "1e999", -1, True, None, "abc", [1]):
        with pytest.raises(ParseError):
            number(bad, "x")
    with pytest.raises(ParseError):
        number(MAX_LINK_GBPS * 2, "bw", maximum=MAX_LINK_GBPS)


def test_gpu_burn_gflops_beyond_any_gpu_is_a_parse_error(sample):
    text = sample("gpu_burn_8xa100_ok.txt")
    bad = text.replace("(7150 Gflop/s)", "(" + "9" * 400 + " Gflop/s)", 1)  # float() of it is inf
    assert bad != text
    with pytest.raises(ParseError) as exc:
        parse_gpu_burn(bad)
    assert not exc.value.internal and "Gflop/s" in str(exc.value)
