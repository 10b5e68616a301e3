"""nccl-tests parser on every real sample, on outputs written to nccl-tests' own format strings
(per-iteration columns, timestamps, -N sweeps, the -J JSON), and on cut-short and hostile text."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers.nccl_tests import is_result_row, parse_nccl_tests
from tests.unit.burnin.parsers._samples import load, names

DEGRADED = "nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt"
GB200_RACK = "nccl_tests_all_reduce_gb200_nvl72_rack_72gpu_PARTIAL.txt"
GB300_TRAY = "nccl_tests_all_reduce_perf_4xgb300_tray_nccl2287_PARTIAL.txt"
GB300_RACK = "nccl_tests_all_reduce_perf_64xgb300_16_trays_nvl72_PARTIAL.txt"


def test_every_nccl_sample_is_covered():
    # a new sample must get a test here: the list below is every nccl-tests capture
    assert names("nccl_tests") == [
        "nccl_tests_all_gather_out_of_bounds_FAILED_old_format.txt",
        "nccl_tests_all_gather_perf_8gpu_ok.txt",
        DEGRADED,
        "nccl_tests_all_reduce_8xh100_cuda_system_not_initialized.txt",
        GB200_RACK,
        GB300_TRAY,
        GB300_RACK,
        "nccl_tests_all_reduce_perf_8xa100_ok.txt",
        "nccl_tests_alltoall_perf_8gpu_ok.txt",
        "nccl_tests_message_formats_from_source.txt",
        "nccl_tests_test_nccl_failure_unhandled_cuda_error_with_warn.txt",
    ]


def test_a_whole_nvl72_racks_all_reduce_excerpt(sample):
    """A real GB200 NVL72 rack's run over multi-node NVLink, from its last rank line on: the
    driver named the GPU 'NVIDIA Graphics Device'; busbw 834.57/846.82 GB/s at 8 GiB."""
    run = parse_nccl_tests(sample(GB200_RACK))
    assert [(r.rank, r.host, r.device, r.device_name) for r in run.ranks] == [
        (71, "slurm-gb200-207-171", 3, "NVIDIA Graphics Device")
    ]
    assert [row.size for row in run.rows] == [2**29, 2**30, 2**31, 2**32, 2**33]
    last = run.rows[-1]
    assert (last.out_of_place.busbw_gbps, last.in_place.busbw_gbps) == (834.57, 846.82)
    assert (run.out_of_bounds, run.avg_busbw_gbps) == (0, 745.53)


def test_gb300_runs_whose_authors_cut_the_small_sizes_and_the_middle_ranks(sample):
    """Real GB300 runs (NCCL 2.28.7) with '# Truncated  smaller message sizes' and, across 16
    trays, '...' for ranks 2-61: the rows and ranks shown are read, the elisions skipped, and the
    run ends at '# Collective test concluded'."""
    tray = parse_nccl_tests(sample(GB300_TRAY))
    assert tray.complete and tray.collective == "all_reduce_perf" and tray.nccl_version == "2.28.7+cuda13.0"
    assert [r.bus_id for r in tray.ranks] == ["0008:06:00", "0009:06:00", "0018:06:00", "0019:06:00"]
    assert [row.size for row in tray.rows] == [2**33, 2**34]
    assert tray.rows[-1].in_place.busbw_gbps == 685.27 and tray.avg_busbw_gbps == 446.673
    rack = parse_nccl_tests(sample(GB300_RACK))
    assert [r.rank for r in rack.ranks] == [0, 1, 62, 63] and rack.hosts == ("GPU-5705", "GPU-6569")
    assert rack.rows[-1].out_of_place.busbw_gbps == 930.48 and rack.avg_busbw_gbps == 455.539


def test_new_format_two_nodes_degraded(sample):
    run = parse_nccl_tests(sample(DEGRADED))
    assert run.format == "text" and run.complete
    assert run.collective == "all_reduce_perf"  # from the echoed command line
    assert run.nccl_version == "2.26.2+cuda12.8"
    assert (run.n_threads, run.n_gpus, run.min_bytes, run.max_bytes) == (1, 1, 8, 17179869184)
    assert (run.warmup_iters, run.iters, run.agg_iters, run.validation) == (5, 20, 1, True)
    assert len(run.ranks) == 16 and run.hosts == ("lccn09", "lccn19")
    assert run.ranks_on("lccn19") == tuple(range(8, 16))
    r8 = run.ranks[8]
    assert (r8.rank, r8.group, r8.pid, r8.host, r8.device) == (8, 0, 106224, "lccn19", 0)
    assert (r8.bus_id, r8.device_name) == ("0000:18:00", "NVIDIA H100 80GB HBM3")
    assert len(run.rows) == 32 and [r.size for r in run.rows[:3]] == [8, 16, 32]
    last = run.rows[-1]
    assert (last.size, last.count, last.type, last.redop, last.root) == (
        17179869184,
        4294967296,
        "float",
        "sum",
        -1,
    )
    assert last.out_of_place.time_us == 360942 and last.out_of_place.algbw_gbps == 47.60
    assert last.out_of_place.busbw_gbps == 89.24 and last.in_place.busbw_gbps == 89.24
    assert last.wrong == 0 and run.wrong == 0 and last.out_of_place.error is None
    assert [r.size for r in run.largest_rows(2)] == [8589934592, 17179869184]
    assert (run.out_of_bounds, run.out_of_bounds_failed) == (0, False)
    assert run.avg_busbw_gbps == 33.4128 and run.avg_busbw_verdict is None
    assert run.warns == () and run.errors == ()


def test_old_format_all_reduce_validation_off_with_interleaved_info(sample):
    run = parse_nccl_tests(sample("nccl_tests_all_reduce_perf_8xa100_ok.txt"))
    assert run.complete and run.validation is False and run.agg_iters is None
    assert run.hosts == ("localhost",) and len(run.ranks) == 8 and run.ranks[3].group is None
    assert run.ranks[3].bus_id == "0x00" and run.ranks[3].device_name == "A100-SXM4-40GB"
    # the 'NCCL INFO Launch mode Parallel' line between header and rows is not a row
    assert len(run.rows) == 34 and run.rows[0].size == 0
    last = run.rows[-1]
    assert (last.redop, last.root) == ("sum", None)
    assert last.out_of_place.wrong is None and last.wrong is None and run.wrong is None
    assert last.busbw_gbps == pytest.approx((235.26 + 235.03) / 2)
    assert run.avg_busbw_gbps == 68.4048


@pytest.mark.parametrize(
    "name, busbw_8g",
    [
        ("nccl_tests_all_gather_perf_8gpu_ok.txt", (223.39, 230.07)),
        ("nccl_tests_alltoall_perf_8gpu_ok.txt", (224.31, 226.16)),
    ],
)
def test_old_format_without_redop_values(sample, name, busbw_8g):
    run = parse_nccl_tests(sample(name))
    assert run.complete and len(run.rows) == 34
    last = run.rows[-1]
    assert last.size == 8589934592 and last.redop is None and last.root is None
    assert (last.out_of_place.busbw_gbps, last.in_place.busbw_gbps) == busbw_8g
    # repeated zero-byte rows are one sweep, not five
    assert len(run.cycles()) == 1


def test_old_format_out_of_bounds_failed_without_hash_prefix(sample):
    run = parse_nccl_tests(sample("nccl_tests_all_gather_out_of_bounds_FAILED_old_format.txt"))
    assert run.collective == "all_gather_perf" and run.n_gpus is None  # no '# nThread' header
    assert run.complete and run.avg_busbw_gbps == 128.942
    assert (run.out_of_bounds, run.out_of_bounds_failed) == (2, True)
    (row,) = run.rows
    # the old 'error' column is a deviation, not a count of wrong elements
    assert row.out_of_place.error == 1.0 and row.out_of_place.wrong is None and run.wrong is None
    assert run.validation is True


def test_cuda_failure_fabric_manager_down(sample):
    run = parse_nccl_tests(sample("nccl_tests_all_reduce_8xh100_cuda_system_not_initialized.txt"))
    assert not run.complete and run.rows == () and run.ranks == ()
    assert run.n_gpus == 8 and run.validation is True
    assert [(e.kind, e.host, e.where) for e in run.errors] == [
        ("cuda", "test", "common.cu:941"),
        ("trace", "test", "common.cu:891"),
    ]
    assert run.errors[0].message == "system not yet initialized"


def test_nccl_failure_with_warn_lines(sample):
    run = parse_nccl_tests(sample("nccl_tests_test_nccl_failure_unhandled_cuda_error_with_warn.txt"))
    assert not run.complete and run.rows == ()
    assert run.hosts == ("GENOA-06",)
    nccl = [e for e in run.errors if e.kind == "nccl"]
    assert len(nccl) == 2 and nccl[0].host == "GENOA-06" and nccl[0].where == "common.cu:392"
    # '<error> / <ncclGetLastError>' with an empty last error: the dangling ' / ' goes
    assert nccl[0].message == "unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
    assert sum(e.kind == "trace" for e in run.errors) == 10
    assert [(w.host, w.pid, w.device, w.source) for w in run.warns] == [
        ("GENOA-06", 4766, "1", "graph/search.cc:1135"),
        ("GENOA-06", 4766, "1", "graph/search.cc:1135"),
        ("GENOA-06", 4766, "1", "enqueue.cc:1500"),
    ]
    assert run.warns[2].message == "Cuda failure 1 'invalid argument'"


def test_format_reference_is_not_tool_output(sample):
    # C source with the format strings: it must not pass as a (failed) run
    with pytest.raises(ParseError, match="not nccl-tests output"):
        parse_nccl_tests(sample("nccl_tests_message_formats_from_source.txt"))


def test_cut_short_output_is_incomplete_with_the_rows_so_far(sample):
    text = sample(DEGRADED)
    cut = text[: text.index("   536870912")] + "  1073741824     268435456     float     sum      -1    228"
    run = parse_nccl_tests(cut)
    assert not run.complete and run.avg_busbw_gbps is None and run.out_of_bounds is None
    assert run.rows[-1].size == 268435456  # the half-printed row is not a row
    assert len(run.ranks) == 16


# Written to nccl-tests 2.19.6's format strings (util.cu writeDeviceReport / writeResultHeader /
# writeBenchmarkLine*): per-iteration timing columns, a timestamp column, two sweeps (-N 2).
NEW_HEADER = """\
# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 1 iters: 5 agg iters: 1 validation: 1 graph: 0 unalign: 0
# Per-Iteration Report: CUDA event timing; i_* uses max over process rows
#
# Using devices
#  Rank  0 Group  0 Pid   4242 on     node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   5151 on     node02 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#
#                                                         out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%) %Y-%m-%d %H:%M:%S
"""
ROW_1M = (
    "     1048576        131072     float    none      -1    40.10   26.15   13.07       0    39.00    41.20"
    "    41.20     1.50    39.80   26.35   13.17       0    39.10    40.90    40.90     1.20  2026-11-22 10:00:01\n"
)
ROW_2M = (
    "     2097152        262144     float    none      -1    61.00   34.38   17.19       3    60.00    62.00"
    "    62.00     1.10    60.50   34.66   17.33  1.2e+06    60.00    61.00    61.00     0.90  2026-11-22 10:00:02\n"
)
NEW_FOOTER = """\
# Out of bounds values : 1200003 FAILED
# Avg bus bandwidth    : 15.19 OK
#
# Collective test concluded: all_gather_perf
"""


def test_new_format_per_iteration_columns_timestamps_and_sweeps():
    run = parse_nccl_tests(NEW_HEADER + ROW_1M + ROW_2M + ROW_1M + ROW_2M + NEW_FOOTER)
    assert run.collective == "all_gather_perf" and run.tests_version == "2.19.6"
    assert run.hosts == ("node01", "node02")
    assert len(run.rows) == 4
    row = run.rows[1]
    assert (row.size, row.redop, row.root) == (2097152, "none", -1)
    assert row.out_of_place.busbw_gbps == 17.19 and row.in_place.busbw_gbps == 17.33
    assert (row.out_of_place.wrong, row.in_place.wrong) == (
        3,
        1_200_000,
    )  # '%6g' prints big counts as 1.2e+06
    assert [len(c) for c in run.cycles()] == [2, 2]
    assert run.wrong == 2 * 1_200_003
    assert (run.out_of_bounds, run.out_of_bounds_failed, run.avg_busbw_verdict) == (1200003, True, "OK")


def test_launcher_and_timeout_lines_are_errors_with_hosts():
    text = (
        NEW_HEADER
        + ROW_1M
        + "node02: Test timeout (600s) common.cu:412\n"
        + "mpirun noticed that process rank 1 with PID 5151 on node node02 exited on signal 9 (Killed).\n"
        + "srun: error: node02: task 1: Killed\n"
    )
    run = parse_nccl_tests(text)
    assert not run.complete
    assert [(e.kind, e.host) for e in run.errors] == [
        ("timeout", "node02"),
        ("launcher", "node02"),
        ("launcher", "node02"),
    ]
    assert run.errors[0].message == "test timeout (600 s)"


def test_two_runs_in_one_output_are_refused(sample):
    text = sample(DEGRADED)
    with pytest.raises(ParseError, match="two runs"):
        parse_nccl_tests(text + text)


@pytest.mark.parametrize("text", ["", "hello\nworld\n", "#\n# Using nothing\n", "{}", "[1, 2]"])
def test_not_nccl_tests(text):
    with pytest.raises(ParseError) as exc:
        parse_nccl_tests(text)
    assert not exc.value.internal


def test_non_text_input():
    with pytest.raises(ParseError):
        parse_nccl_tests(b"# nThread 1")  # type: ignore[arg-type]


# -J output, written to nccl-tests' util.cu JSON writer (format version 2): booleans as the
# strings "true"/"false", 'root' as the padded printf text, 'nwrong' null when validation is off.
JSON_DOC = {
    "version": 2,
    "start_time": "2026-11-22 10:00:00",
    "args": ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "16G", "-J", "/tmp/r.json"],
    "env": ["NCCL_DEBUG=WARN"],
    "nccl_version": 22602,
    "config": {
        "nthreads": 1,
        "ngpus": 1,
        "minimum_bytes": 8,
        "maximum_bytes": 17179869184,
        "step_factor": 2,
        "warmup_iters": 5,
        "iterations": 20,
        "aggregated_iterations": 1,
        "validation": 1,
        "graph": 0,
        "blocking_collectives": "false",
        "per_iter_timing": "false",
        "parallel_init": "false",
        "devices": [
            {
                "rank": 0,
                "group": 0,
                "pid": 11,
                "hostname": "node01",
                "device": 0,
                "device_hex": "0000:18:00",
                "device_info": "NVIDIA H100 80GB HBM3",
            },
            {
                "rank": 1,
                "group": 0,
                "pid": 22,
                "hostname": "node02",
                "device": 0,
                "device_hex": "0000:18:00",
                "device_info": "NVIDIA H100 80GB HBM3",
            },
        ],
    },
    "results": [
        {
            "size": 8589934592,
            "count": 2147483648,
            "type": "float",
            "redop": "sum",
            "root": "    -1",
            "out_of_place": {"time": 180762.0, "alg_bw": 47.52, "bus_bw": 89.10, "nwrong": 0.0},
            "in_place": {"time": 180643.0, "alg_bw": 47.55, "bus_bw": 89.16, "nwrong": 5.0},
            "actual_iterations": 20,
            "experiment_name": "",
        },
        {
            "size": 17179869184,
            "count": 4294967296,
            "type": "float",
            "redop": "sum",
            "root": "    -1",
            "out_of_place": {"time": 360942.0, "alg_bw": 47.60, "bus_bw": 89.24, "nwrong": 0.0},
            "in_place": {"time": 360965.0, "alg_bw": 47.59, "bus_bw": 89.24, "nwrong": 0.0},
            "actual_iterations": 20,
            "experiment_name": "",
        },
    ],
    "out_of_bounds": {"count": 5, "okay": "false"},
    "average_bus_bandwidth": {"bandwidth": 89.18, "okay": "unchecked"},
    "errors": [],
    "end_time": "2026-11-22 10:01:00",
}


def test_json_output():
    run = parse_nccl_tests(json.dumps(JSON_DOC, indent=1))
    assert run.format == "json" and run.complete
    assert run.collective == "all_reduce_perf" and run.nccl_version == "2.26.2"
    assert (run.n_gpus, run.max_bytes, run.iters, run.validation) == (1, 17179869184, 20, True)
    assert run.hosts == ("node01", "node02") and run.ranks[1].bus_id == "0000:18:00"
    assert [(r.size, r.redop, r.root) for r in run.rows] == [
        (8589934592, "sum", -1),
        (17179869184, "sum", -1),
    ]
    assert run.rows[0].in_place.wrong == 5 and run.wrong == 5
    assert run.rows[1].busbw_gbps == pytest.approx(89.24)
    assert (run.out_of_bounds, run.out_of_bounds_failed) == (5, True)
    assert run.avg_busbw_gbps == 89.18 and run.avg_busbw_verdict is None


def test_json_validation_off_and_unfinished():
    doc = json.loads(json.dumps(JSON_DOC))
    doc["config"]["validation"] = 0
    for res in doc["results"]:
        res["out_of_place"]["nwrong"] = res["in_place"]["nwrong"] = None
    del doc["average_bus_bandwidth"], doc["out_of_bounds"]
    run = parse_nccl_tests(json.dumps(doc))
    assert run.validation is False and run.wrong is None and not run.complete
    # a JSON file cut off mid-write does not decode: an error, never a pass-looking record
    with pytest.raises(ParseError, match="does not decode"):
        parse_nccl_tests(json.dumps(JSON_DOC)[:700])


def test_json_broken_records():
    doc = json.loads(json.dumps(JSON_DOC))
    doc["results"][0]["out_of_place"] = {"time": "x"}
    with pytest.raises(ParseError, match="lacks time"):
        parse_nccl_tests(json.dumps(doc))


_LINES = [line for name in names("nccl_tests") for line in load(name).splitlines()]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, len(_LINES) - 1), max_size=40), st.integers(0, 2**32))
def test_shuffled_sample_lines_never_crash(indices, seed):
    lines = [_LINES[i] for i in indices]
    rng = random.Random(seed)
    for i in range(len(lines)):
        if rng.random() < 0.2 and lines[i]:
            cut = rng.randrange(len(lines[i]))
            lines[i] = lines[i][:cut]
    try:
        run = parse_nccl_tests("\n".join(lines))
    except ParseError as exc:
        assert not exc.internal, exc
        return
    assert all(r.size >= 0 and len(r.sides) == 2 for r in run.rows)


@pytest.mark.parametrize("name", [DEGRADED, "nccl_tests_all_reduce_perf_8xa100_ok.txt"])
def test_is_result_row_picks_exactly_the_table_rows(sample, name):
    # the watchdog's start-up allowance ends at the first line this accepts
    text = sample(name)
    accepted = [line for line in text.splitlines() if is_result_row(line)]
    assert len(accepted) == len(parse_nccl_tests(text).rows) > 0
    assert not any(line.lstrip().startswith("#") for line in accepted)


def test_is_result_row_with_per_iteration_columns():
    assert is_result_row(ROW_1M.rstrip("\n")) and not is_result_row(NEW_HEADER.splitlines()[0])


@pytest.mark.parametrize(
    "name, expected",
    [
        ("nccl_tests_all_gather_perf_8gpu_ok.txt", False),  # old table: count is per rank (size / 4 / 8)
        ("nccl_tests_alltoall_perf_8gpu_ok.txt", False),
        ("nccl_tests_all_reduce_2x8xh100_ndr_degraded_89GBps.txt", True),  # 'sum', root -1, count = size / 4
    ],
)
def test_whether_a_run_is_an_all_reduce_is_read_from_its_rows_when_it_does_not_say(name, expected):
    """The profile's bus-bandwidth floors are all_reduce_perf figures; an old table names no
    collective, but its counts do: all_reduce prints the whole buffer's elements, all_gather and
    alltoall one rank's share (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)."""
    assert parse_nccl_tests(load(name)).is_all_reduce is expected


def test_rccl_tests_header_names_the_suite_and_rccl_and_reads_the_rows() -> None:
    run = parse_nccl_tests(load("rccl_tests_all_reduce_8xmi300x_np8_PARTIAL.txt"))
    assert run.tests_version == "rccl-tests develop:448c4c7"
    assert run.nccl_version == "RCCL 2.22.3-develop:f5b15f2"
    assert [r.device_name for r in run.ranks] == ["AMD Instinct MI300X"] * 8 and run.hosts == ("host",)
    assert run.ranks[7].bus_id == "0000:df:00.0" and run.rows[-1].out_of_place.busbw_gbps == pytest.approx(
        318.98
    )
    assert run.complete and run.avg_busbw_gbps == pytest.approx(116.669)


def test_rccl_tests_multi_node_ranks_without_a_group_column() -> None:
    run = parse_nccl_tests(load("rccl_tests_header_2x8xmi250x_PARTIAL.txt"))
    assert run.hosts == ("pinoak0003", "pinoak0004") and run.ranks_on("pinoak0004") == (8, 9)
    assert run.n_gpus == 8 and not run.complete and run.tests_version == "rccl-tests develop:448c4c7"
