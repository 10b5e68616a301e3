"""The ROCm Validation Suite's output: the edges the samples (tests/fixtures/samples/rvs_*) do not show."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.rvs import parse_rvs
from tests.unit.burnin.parsers._samples import load


def test_gst_reads_each_gpus_final_result_and_the_summary_places_it() -> None:
    run = parse_rvs(load("rvs_gst_8xmi355x_doc.txt"))
    (action,) = run.actions
    assert (action.name, action.module, action.result) == ("gst-Tflops-2K2K2K-trig-fp4", "gst", "PASS")
    assert action.met[42583] is True and action.gflops[42583] == (1063560.0, 0.0)
    assert run.summary and run.gpu_count == 8 and run.version == "1.6.75"
    assert run.name(42583) == "GPU 0 (0000:05:00.0)" and run.subject(57875) == "GPU 7"


def test_pbqt_reads_the_pairs_and_their_bandwidth_lines() -> None:
    (action,) = parse_rvs(load("rvs_pbqt_8xmi355x_doc.txt")).actions
    assert action.no_peers == [] and action.bandwidths == 9
    (bad,) = parse_rvs(load("rvs_pbqt_8xmi355x_gpu0_gpu5_no_peer_DERIVED.txt")).actions
    assert bad.no_peers == [(42583, 51771)] and bad.result == "FAIL"


def test_a_summary_without_its_closing_border_is_not_an_end() -> None:
    text = load("rvs_babel_8xmi355x_doc.txt")
    assert parse_rvs(text).summary
    assert not parse_rvs(text[: text.rstrip("\n").rfind("\n") + 1]).summary


def test_error_lines_are_kept_and_a_run_with_no_action_is_refused() -> None:
    run = parse_rvs("[RESULT] [1.0] Action name :a\n[ERROR ] [2.0] gst hipBLASLt failed on GPU 5\n")
    assert run.errors == ["gst hipBLASLt failed on GPU 5"] and not run.summary
    with pytest.raises(ParseError, match="no 'Action name :'"):
        parse_rvs("[ERROR ] [1.0] no GPU found\n")
