"""sysbench memory output (real captures on the dev VM) parsed, and what is not a figure refused."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.sysbench import parse_sysbench_memory
from tests.unit.burnin.parsers._samples import load

READ = "sysbench_memory_read_local_64m_2threads_kvm.txt"


def test_the_read_run_gives_its_bandwidth_and_options() -> None:
    run = parse_sysbench_memory(load(READ))
    assert (run.version, run.threads, run.block_kib, run.operation, run.scope) == (
        "1.0.20",
        2,
        65536,
        "read",
        "local",
    )
    assert run.mib_per_s == 36901.08 and run.mib_transferred == 369152.0
    assert run.total_time_s == 10.0031 and run.events == 5768
    assert run.gb_per_s == pytest.approx(36901.08 * 1048576 / 1e9)


def test_a_fatal_line_is_the_reason_it_cannot_be_read() -> None:
    with pytest.raises(ParseError, match="Invalid value for memory-oper: bogus"):
        parse_sysbench_memory(load("sysbench_memory_fatal_bad_option.txt"))


def test_an_output_cut_before_the_statistics_is_refused() -> None:
    text = load(READ)
    cut = text[: text.index("General statistics")]
    with pytest.raises(ParseError, match="cut short"):
        parse_sysbench_memory(cut)
    with pytest.raises(ParseError, match="did not finish"):
        parse_sysbench_memory(text[: text.index("Total operations")])


def test_another_sysbench_test_or_tool_is_refused() -> None:
    cpu = load(READ).replace("Running memory speed test", "Running the test with following options")
    with pytest.raises(ParseError, match="not of the memory test"):
        parse_sysbench_memory(cpu)
    with pytest.raises(ParseError, match="banner"):
        parse_sysbench_memory(load("fio_json_seqwrite_seqread_randread_ext4_libaio.json"))
