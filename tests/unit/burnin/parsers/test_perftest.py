"""perftest parsers on the real captures (tests/fixtures/samples/index.tsv) and on hostile input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers.perftest import classify_problem, parse_perftest, parse_perftest_json
from tests.paths import REPO

STANDIN_JSON = REPO / "bringup/lab/standins/samples/ib_write_bw_out_json_ndr_cx7_DERIVED.json"


def test_cx7_ndr_client_runs_one_report_per_bw_test(sample):
    out = parse_perftest(sample("perftest_ndr_cx7_client_send_read_write_bw.txt"))
    assert [r.test for r in out.reports] == ["Send BW Test", "RDMA_Read BW Test", "RDMA_Write BW Test"]
    send, read, write = out.reports
    assert (write.unit, write.device, write.link_type, write.bidirectional) == (
        "Gb/sec",
        "mlx5_0",
        "IB",
        False,
    )
    assert write.settings["Mtu"] == "4096[B]" and write.settings["Number of qps"] == "1"
    assert (write.local_lid, write.remote_lid) == (1, 2)
    (row,) = write.rows  # the 'Conflicting CPU frequency' line inside the table is not a row
    assert (row.size, row.iterations, row.bw_peak, row.bw_average, row.msg_rate_mpps) == (
        65536, 5000, 392.38, 392.34, 0.748336,
    )  # fmt: skip
    assert write.average_gbps() == 392.34
    assert read.average_gbps() == 328.61
    # ib_send_bw without --report_gbits: MiB/s, converted (46557 MiB/s ~ 390.5 Gb/s)
    assert send.unit == "MiB/sec" and send.average_gbps() == pytest.approx(390.55, abs=0.01)
    assert out.problems == ()


def test_interleaved_server_and_client_log_has_two_reports(sample):
    out = parse_perftest(sample("ib_write_bw_loopback_8M_superbench.txt"))
    assert [r.role for r in out.reports] == [None, "server"]
    assert {r.device for r in out.reports} == {"ib0"}
    # MB/sec of older releases is 2^20 bytes too: 24056.72 MB/s -> 201.8 Gb/s (HDR class)
    assert [r.average_gbps() for r in out.reports] == [pytest.approx(201.80, abs=0.01)] * 2


def test_sweep_takes_the_largest_message_not_the_average(sample):
    out = parse_perftest(sample("ib_write_bw_loopback_all_sizes_superbench.txt"))
    report = out.report()
    assert len(report.rows) == 23 and report.rows[-1].size == 8388608
    assert report.average_gbps() == pytest.approx(23240.68 * 1048576 * 8 / 1e9, abs=0.01)
    mean_gbps = sum(r.bw_average for r in report.rows) / len(report.rows) * 1048576 * 8 / 1e9
    assert report.average_gbps() > 1.5 * mean_gbps  # small messages would drag an average down


def test_cut_short_rows_have_no_figure(sample):
    out = parse_perftest(sample("ib_write_bw_server_roce_waiting_partial.txt"))
    (report,) = out.reports
    assert report.role == "server" and report.link_type == "Ethernet"
    assert report.rows[0].bw_average is None and report.average_gbps() is None
    partial = parse_perftest(sample("ib_write_bw_hdr_a_report_gbits_client_partial.txt")).report()
    assert [r.bw_average for r in partial.rows] == [0.042185, 0.084457, 0.17, None]
    assert partial.average_gbps() == 0.17  # the largest complete row


def test_bidirectional_duration_header(sample):
    (report,) = parse_perftest(sample("ib_write_bw_bidirectional_ngc_multinode_partial.txt")).reports
    assert report.bidirectional and report.test == "RDMA_Write Bidirectional BW Test"
    assert report.peak_measured is False and report.device == "mlx5_3"
    assert report.settings["Number of qps"] == "2" and report.average_gbps() is None


def test_errors_are_problems_and_classified(sample):
    out = parse_perftest(sample("perftest_error_unable_to_create_qp.txt"))
    assert out.reports == () and "Unable to create QP." in out.problems
    assert {classify_problem(p) for p in out.problems} == {"run"}
    assert classify_problem("Couldn't connect to node02:18515") == "run"
    assert classify_problem(" Port number 1 state is Down") == "link"
    assert (
        classify_problem(" Failed status transport retry counter exceeded (12): wr_id 0 syndrom 0x81")
        == "link"
    )
    assert classify_problem("RDMA_Write BW Test") == ""


def test_source_format_reference_is_not_output(sample):
    with pytest.raises(ParseError):
        parse_perftest(sample("perftest_message_formats_from_source.txt"))


def test_out_json_derived_sample():
    text = STANDIN_JSON.read_text(encoding="utf-8").split("\n", 1)[1]
    report = parse_perftest_json(text)
    assert report.device == "mlx5_0" and report.test == "RDMA_Write_BW_Test" and not report.bidirectional
    assert report.average_gbps() == 392.34 and report.rows[0].iterations == 5000
    mib = parse_perftest_json(text, unit="MiB/sec")
    assert mib.average_gbps() == pytest.approx(392.34 * 1048576 * 8 / 1e9, abs=1e-3)


def test_out_json_of_older_releases_unquoted_and_trailing_commas():
    text = (
        '{\n"test_info": {\n"test": RDMA_Write_Bidirectional_BW_Test,\n"Device": mlx5_1,\n"Mtu": 4096,\n},\n'
        '"results": {\n"MsgSize": 65536,\n"n_iterations": 1200,\n"BW_peak": 0.00,\n"BW_average": 781.5,\n'
        '"MsgRate": 1.49,\n},\n}\n'
    )
    report = parse_perftest_json(text)
    assert report.bidirectional and report.device == "mlx5_1" and report.average_gbps() == 781.5


@pytest.mark.parametrize(
    "text",
    ["", "[]", '{"test_info": {}}', '{"test_info": {}, "results": {"BW_average": 1}}', "not json", "{]"],
)
def test_out_json_rejects_what_is_not_a_report(text):
    with pytest.raises(ParseError):
        parse_perftest_json(text)


def test_out_json_unknown_unit():
    with pytest.raises(ParseError):
        parse_perftest_json('{"test_info": {}, "results": {}}', unit="furlongs")


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_any_text_is_a_report_or_a_parse_error(text):
    for parse in (parse_perftest, parse_perftest_json):
        try:
            parse(text)
        except ParseError as exc:
            assert not exc.internal, exc


@settings(max_examples=80, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda c: st.lists(c) | st.dictionaries(st.text(max_size=8), c),
        max_leaves=12,
    )
)
def test_any_json_document_is_a_report_or_a_parse_error(doc):
    try:
        parse_perftest_json(json.dumps({"test_info": doc, "results": doc}))
    except ParseError as exc:
        assert not exc.internal, exc


def test_gpu_memory_run_names_its_cuda_device_and_dma_buf(sample):
    """`--use_cuda=0 --use_cuda_dmabuf`: perftest's CUDA lines before the report say which GPU's
    memory was loaded and that it went through DMA-BUF; the report itself parses as usual."""
    out = parse_perftest(sample("ib_write_bw_use_cuda_dmabuf_h200_client.txt"))
    assert out.cuda_device == 0
    assert out.cuda_dmabuf is True
    assert out.report().average_gbps() == 140.4


def test_host_memory_run_has_no_cuda_device(sample):
    out = parse_perftest(sample("perftest_ndr_cx7_client_send_read_write_bw.txt"))
    assert out.cuda_device is None
    assert out.cuda_dmabuf is False


def test_cuda_device_from_older_releases_picking_first():
    """Older perftest picked the first GPU: 'There are 4 devices supporting CUDA, picking first...'
    then '[pid = N, dev = 0] device name = [...]' (linux-rdma/perftest pull 21's quoted run)."""
    text = (
        "initializing CUDA\nThere are 4 devices supporting CUDA, picking first...\n"
        "[pid = 7722, dev = 0] device name = [Tesla V100-SXM2-32GB]\n"
        "Couldn't connect to 10.0.0.1:18515\n"
    )
    out = parse_perftest(text)
    assert out.cuda_device == 0 and not out.cuda_dmabuf
