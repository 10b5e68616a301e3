"""burnin/parsers/nvidia_smi_xml.py: `nvidia-smi -q -x` read as `nvidia-smi -q` is, on real captures
of a GB300 and a GB200 tray and of B200 and H100 nodes (tests/fixtures/samples/nvidia_smi_q_x_xml_*)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from burnin.parsers import ParseError
from burnin.parsers.nvidia_smi import parse_query
from burnin.parsers.nvidia_smi_xml import looks_like_xml, query_tree

GB300 = "nvidia_smi_q_x_xml_4xgb300_580_173.xml"
B200 = "nvidia_smi_q_x_xml_8xb200_580_105.xml"


def test_a_gb300_tray_reads_as_its_query(sample):
    q = parse_query(sample(GB300))
    assert (q.driver_version, q.cuda_version, q.attached_gpus, q.problems) == ("580.173.02", "13.0", 4, ())
    assert [g.bus_id for g in q.gpus] == [
        "00000008:06:00.0",
        "00000009:06:00.0",
        "00000018:06:00.0",
        "00000019:06:00.0",
    ]
    for g in q.gpus:
        assert (g.product_name, g.ecc_mode_current, g.mig_mode_current) == (
            "NVIDIA GB300",
            "Enabled",
            "Disabled",
        )
        assert (g.fabric_state, g.fabric_status, g.fabric_clique_id) == ("Completed", "Success", "32766")
        assert g.fabric_cluster_uuid == "00000001-0000-0000-0000-000000000001"
        assert (g.fabric_health, g.fabric_bandwidth) == ("Healthy", "Full")
        assert (g.pcie.gen_max, g.pcie.gen_current, g.pcie.width_max, g.pcie.width_current) == (6, 6, 16, 16)
        assert g.ecc_volatile["dram_uncorrectable"] == 0 and g.ecc_volatile["sram_uncorrectable"] == 0
        assert g.remapped_rows is not None and (g.remapped_rows.pending, g.remapped_rows.failure) == (
            False,
            False,
        )
        assert g.clocks_event_reasons["gpu_idle"] is True and g.clocks_event_reasons["hw_slowdown"] is False


def test_every_gpu_element_becomes_a_gpu_block_with_the_names_the_xml_gives(sample):
    """A cross-check against the XML itself: the same GPUs, names and serials, in order."""
    text = sample(B200)
    root = ET.fromstring(text)
    q = parse_query(text)
    assert [(g.bus_id, g.product_name, g.serial) for g in q.gpus] == [
        (e.get("id"), e.findtext("product_name"), e.findtext("serial")) for e in root.findall("gpu")
    ]
    assert {(g.fabric_clique_id, g.fabric_cluster_uuid) for g in q.gpus} == {
        ("0", "00000000-0000-0000-0000-000000000000")
    }


def test_a_document_cut_short_is_no_output(sample):
    text = sample(GB300)
    with pytest.raises(ParseError, match="not well formed"):
        parse_query(text[: len(text) // 2])
    # The corpus's editor-cut L4 capture: not well formed either.
    with pytest.raises(ParseError, match="not well formed"):
        parse_query(sample("nvidia_smi_q_x_xml_l4_555_PARTIAL.xml"))


def test_a_line_above_the_document_is_skipped_and_another_root_refused(sample):
    text = "$ nvidia-smi -q -x\n" + sample(GB300)
    assert looks_like_xml(text) and len(parse_query(text).gpus) == 4
    assert not looks_like_xml("==============NVSMI LOG==============\n")
    with pytest.raises(ParseError, match="no <nvidia_smi_log> document"):
        query_tree("<?xml version='1.0'?>\n<other/>\n")


def test_an_element_the_reader_does_not_ask_for_keeps_its_tag():
    tree = query_tree(
        "<?xml version='1.0'?>\n<nvidia_smi_log><driver_version>580.173.02</driver_version>"
        "<gpu id='00000000:29:00.0'><product_name>NVIDIA GB200</product_name>"
        "<c2c_mode>Enabled</c2c_mode></gpu></nvidia_smi_log>\n"
    )
    (gpu,) = [n for n in tree.children if n.key.startswith("GPU ")]
    assert gpu.key == "GPU 00000000:29:00.0"
    assert (gpu.get("Product Name"), gpu.get("c2c_mode")) == ("NVIDIA GB200", "Enabled")
    assert tree.get("Driver Version") == "580.173.02"
