"""amd-smi's outputs: the edges the samples (tests/fixtures/samples/amd_smi_*) do not show."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.amd_smi import parse_ecc, parse_static, parse_topology, parse_xgmi
from tests.unit.burnin.parsers._samples import load


def test_static_reads_the_model_serial_driver_and_ras_state_of_each_gpu() -> None:
    gpus = parse_static(load("amd_smi_static_4xmi300a.txt"))
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    first = gpus[0]
    assert (first.market_name, first.serial, first.bdf, first.driver) == (
        "MI300A",
        "0x7E8F7E20764E2714",
        "0000:01:00.0",
        "6.9.0-rc5+",
    )
    assert first.product_name == "Aqua Vanjaram [Instinct MI300A]"
    assert first.vbios is None  # printed N/A
    assert first.ecc_blocks_enabled == ("SDMA", "GFX", "MMHUB")
    assert "UMC" in first.ecc_blocks_disabled


def test_a_last_gpu_block_shorter_than_the_first_is_a_cut() -> None:
    text = load("amd_smi_static_4xmi300a.txt").rstrip("\n")
    cut = text[: text.rfind("\n")]  # the last GPU loses its last key
    with pytest.raises(ParseError, match="cut short"):
        parse_static(cut)


def test_a_gpu_index_twice_is_two_outputs_run_together() -> None:
    text = load("amd_smi_metric_ecc_blocks_1gpu_ok.txt")
    with pytest.raises(ParseError, match="twice"):
        parse_ecc(text + text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "GPU: 0\n",  # no model
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n",
        "GPU: 0\n    ASIC:\n        MARKET_NAME: MI300X\n  odd indent: 1\n",
    ],
)
def test_static_refuses_what_is_not_its_output(text: str) -> None:
    with pytest.raises(ParseError):
        parse_static(text)


def test_ecc_reads_each_block_in_printed_order_and_the_totals() -> None:
    text = (
        "GPU: 0\n    ECC:\n        TOTAL_CORRECTABLE_COUNT: 4\n        TOTAL_UNCORRECTABLE_COUNT: 1\n"
        "        TOTAL_DEFERRED_COUNT: 0\n    ECC_BLOCKS:\n        UMC:\n            CORRECTABLE_COUNT: 4\n"
        "            UNCORRECTABLE_COUNT: 1\n            DEFERRED_COUNT: 0\n"
    )
    (gpu,) = parse_ecc(text)
    assert gpu.total is not None and (gpu.total.correctable, gpu.total.uncorrectable) == (4, 1)
    assert list(gpu.blocks) == ["UMC"] and gpu.blocks["UMC"].uncorrectable == 1
    blocks = parse_ecc(load("amd_smi_metric_ecc_blocks_1gpu_ok.txt"))[0].blocks
    assert list(blocks) == ["UMC", "SDMA", "GFX", "MMHUB", "PCIE_BIF", "HDP", "XGMI_WAFL"]


@pytest.mark.parametrize(
    "text, match",
    [
        ("GPU: 0\n    ECC_BLOCKS:\n        UMC:\n            CORRECTABLE_COUNT: 0\n", "one count of two"),
        ("GPU: 0\n    ECC_BLOCKS:\n        UMC:\n            CORRECTABLE_COUNT: x\n", "not a count"),
        ("GPU: 0\n    ASIC:\n        MARKET_NAME: MI300X\n", "no ECC count"),
    ],
)
def test_ecc_refuses_a_block_without_both_counts(text: str, match: str) -> None:
    with pytest.raises(ParseError, match=match):
        parse_ecc(text)


def test_xgmi_reads_each_gpu_row() -> None:
    links = parse_xgmi(load("amd_smi_xgmi_8xmi300.txt"))
    assert [link.gpu for link in links] == list(range(8))
    assert {(link.bit_rate_gbps, link.max_bandwidth_gbps, link.link_type) for link in links} == {
        (32.0, 512.0, "XGMI")
    }
    assert links[7].bdf == "0000:df:00.0"


def test_xgmi_refuses_a_row_out_of_layout_and_a_table_without_rows() -> None:
    with pytest.raises(ParseError, match="layout"):
        parse_xgmi("LINK METRIC TABLE:\nGPU0   0000:0c:00.0 fast\n")
    with pytest.raises(ParseError, match="no GPU row"):
        parse_xgmi("LINK METRIC TABLE:\n")


def test_xgmi_reads_rows_whose_bdf_has_no_pci_domain() -> None:
    """An 8x MI300X's amd-smi xgmi in AMD's amd-smi blog prints '05:00.0', not '0000:05:00.0'."""
    links = parse_xgmi(load("amd_smi_xgmi_8xmi300x_short_bdf_PARTIAL.txt"))
    assert [(x.gpu, x.bdf, x.bit_rate_gbps, x.max_bandwidth_gbps, x.link_type) for x in links] == [
        (0, "05:00.0", 32.0, 512.0, "XGMI"),
        (1, "26:00.0", 32.0, 512.0, "XGMI"),
    ]


def test_topology_reads_every_table_by_gpu_pair() -> None:
    topology = parse_topology(load("amd_smi_topology_8xmi300.txt"))
    assert len(topology.bdfs) == 8 and topology.bdfs[0] == "0000:0c:00.0"
    assert set(topology.tables) == {"ACCESS", "WEIGHT", "HOPS", "LINK TYPE", "NUMA BW"}
    assert topology.cell("LINK TYPE", "0000:0c:00.0", "0000:df:00.0") == "XGMI"
    assert topology.cell("LINK TYPE", "0000:22:00.0", "0000:22:00.0") == "SELF"
    assert topology.cell("HOPS", "0000:38:00.0", "0000:5c:00.0") == "1"


def test_topology_reads_the_p2p_capability_tables_and_stops_at_the_legend() -> None:
    """`amd-smi topology -cndz`: a heading with a hyphen (BI-DIRECTIONAL), then amd-smi's legend."""
    topology = parse_topology(load("amd_smi_topology_cndz_8xmi300.txt"))
    assert set(topology.tables) == {"CACHE COHERANCY", "ATOMICS", "DMA", "BI-DIRECTIONAL"}
    assert topology.cell("BI-DIRECTIONAL", "0000:0c:00.0", "0000:22:00.0") == "T"
    assert topology.cell("ATOMICS", "0000:0c:00.0", "0000:5c:00.0") == "64"


def test_topology_refuses_a_table_cut_short_and_a_row_without_every_cell() -> None:
    text = load("amd_smi_topology_8xmi300.txt")
    with pytest.raises(ParseError, match="cut short"):
        parse_topology(text[: text.index("0000:df:00.0 15")])
    with pytest.raises(ParseError, match="not a row"):
        parse_topology(text.replace("0000:0c:00.0 SELF         XGMI", "0000:0c:00.0 SELF", 1))
    with pytest.raises(ParseError, match="no 'NAME TABLE:'"):
        parse_topology("nothing here\n")
