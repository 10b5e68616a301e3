"""`nvidia-smi nvlink -e`: each GPU's NVLink error counters, per link."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers.nvlink_errors import CRC, RECOVERY, REPLAY, counter_kind, parse_nvlink_errors
from tests.unit.burnin.parsers._samples import load


def test_the_h100_excerpt_reads_its_shown_links():
    [gpu] = parse_nvlink_errors(load("nvidia_smi_nvlink_e_h100_partial.txt")).gpus
    assert (gpu.gpu, gpu.name, gpu.uuid) == (
        "0",
        "NVIDIA H100 80GB HBM3",
        "GPU-abcdefab-cdef-abdc-abcd-abababababab",
    )
    assert sorted({link for link, _ in gpu.counters}) == [0, 1, 17]  # the author's '[...]' is skipped
    assert gpu.counters[(17, "CRC Errors")] == 0
    assert set(gpu.counters.values()) == {0}


def test_eight_gpus_and_the_one_link_that_counts():
    gpus = parse_nvlink_errors(load("nvidia_smi_nvlink_e_8xh100_gpu3_link7_replays_DERIVED.txt")).gpus
    assert [g.gpu for g in gpus] == [str(i) for i in range(8)]
    assert all(len(g.counters) == 18 * 3 for g in gpus)
    nonzero = {(g.gpu, k): v for g in gpus for k, v in g.counters.items() if v}
    assert nonzero == {("3", (7, "Replay Errors")): 12, ("3", (7, "CRC Errors")): 4500}


def test_a_tab_indented_capture_and_a_gpu_named_by_its_pci_address():
    text = (
        "=== GPU 0 NVLink Errors ===\n"
        "GPU 00000008:06:00.0\n"
        "\t Link 0: Rx Errors: 3\n"
        "\t Link 0: Effective BER: 1.5e-15\n"  # a ratio, not a count: left out
        "\t Link 1: Replay Errors: N/A\n"
    )
    [gpu] = parse_nvlink_errors(text).gpus
    assert (gpu.gpu, gpu.name, gpu.uuid, gpu.counters) == (
        "00000008:06:00.0",
        "",
        None,
        {(0, "Rx Errors"): 3},
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n",  # nvlink -s
        "\t Link 0: Replay Errors: 1\nGPU 0: x\n",  # a counter that names no GPU
        "No devices were found\n",
    ],
)
def test_other_texts_are_not_this_output(text):
    with pytest.raises(ParseError):
        parse_nvlink_errors(text)


def test_the_kinds_dcgm_judges():
    assert [
        counter_kind(n) for n in ("Replay Errors", "Recovery Errors", "CRC Errors", "CRC Data Errors")
    ] == [
        REPLAY,
        RECOVERY,
        CRC,
        CRC,
    ]
    assert counter_kind("Link recovery successful events") is None
    assert counter_kind("Tx packets") is None


@given(st.text(max_size=400))
def test_any_text_parses_or_is_a_parse_error(text):
    try:
        parse_nvlink_errors(text)
    except ParseError as exc:
        assert not getattr(exc, "internal", False)
