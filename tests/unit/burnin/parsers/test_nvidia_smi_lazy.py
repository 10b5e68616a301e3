"""`nvidia-smi -q` is read lazily where it is laid out as nvidia-smi lays it out (the parse was
most of a 1,000-node preflight's judging): a line's children are cut out of the text only when
asked for, and a section that GPUs print alike is judged once. Every text must still read as
smi_tree.tree, which reads every line, reads it; and `nvlink -s` reads a repeated line once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers._common import split_lines
from burnin.parsers.nvidia_smi import _query, parse_nvlink_status, parse_query
from burnin.parsers.smi_tree import tree
from tests.unit.burnin.parsers._samples import load


def by_tree(text: str):
    """What parse_query gives (or the error it raises) when smi_tree.tree reads every line."""
    try:
        return _query(tree(split_lines(text)), text)
    except ParseError as exc:
        return str(exc)


def lazily(text: str):
    try:
        return parse_query(text)
    except ParseError as exc:
        return str(exc)


KEYS = ["Product Name", "PRODUCT NAME", "Serial Number", "Minor Number", "Processes", "PCI", "GPU Link Info",
        "PCIe Generation", "Max", "Current", "Link Width", "Replays Since Reset", "ECC Mode", "Pending", "ECC Errors",
        "Volatile", "Aggregate", "SRAM Correctable", "Single Bit", "Device Memory", "Retired Pages", "Single Bit ECC",
        "Pending Page Blacklist", "Remapped Rows", "Correctable Error", "Bank Remap Availability Histogram", "Fabric",
        "Clocks Event Reasons", "Idle", "HW Slowdown", "State", "Temperature", "GPU Current Temp", "Power Readings",
        "Power Draw", "MIG Mode", "GPU Reset Status", "Reset Required", "Driver Version"]  # fmt: skip
VALUES = ["", " : 5", " : 16x", " : N/A", " : Yes", " : Active", " : Not Active", " : 71.97 W", ":x", ":: y", " :",
          ": : 3", "  "]  # fmt: skip
# mostly nvidia-smi's 4 spaces a level; now and then a tab, or an indent out of step
INDENTS = [" " * n for n in (0, 4, 4, 8, 8, 12, 16, 2, 6)] + ["\t", "\t\t"]
LINES = st.one_of(
    st.sampled_from(["GPU 00000000:19:00.0", "GPU 00000000:2A:00.0", "", "    "]),
    st.builds("{}{}{}".format, st.sampled_from(INDENTS), st.sampled_from(KEYS), st.sampled_from(VALUES)),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(LINES, max_size=40).map(lambda lines: "\n".join(["Attached GPUs : 2", *lines])))
def test_any_layout_reads_as_every_line_read(text):
    assert lazily(text) == by_tree(text)


def test_the_recorded_outputs_read_as_every_line_read():
    for name in ("nvidia_smi_q_8xh100_535_183.txt", "nvidia_smi_q_d_page_retirement_8gpu_bad_SYNTHETIC.txt"):
        text = load(name)
        assert lazily(text) == by_tree(text)
        assert lazily(text.replace("    ", "\t")) == by_tree(text)  # tabs: 4 columns, as spaces


def test_a_line_that_reads_as_another_key_is_not_the_key():
    """The lazy reading finds a child by the text before its colon; 'Product Name:x' is a key
    alone ('Product Name:x') and 'Product Name:: y' has the key 'Product Name:'."""
    lines = ["Product Name:x", "Product Name:: y", "PRODUCT NAME : H100", "Product Name : not the first"]
    text = "Attached GPUs : 1\nGPU 00000000:19:00.0\n" + "".join(f"    {line}\n" for line in lines)
    (gpu,) = parse_query(text).gpus
    assert gpu.product_name == "H100"
    assert lazily(text) == by_tree(text)


def test_a_line_out_of_step_reads_as_every_line_read():
    """A line at 2 spaces in a GPU block is a child of the block, and the lines after it its
    children: the Temperature after it is not the block's."""
    text = load("nvidia_smi_q_8xh100_535_183.txt")
    text = text.replace("\n    Sparse Operation Mode", "\n  Sparse Operation Mode", 1)  # in the first block
    query = parse_query(text)
    assert query == by_tree(text)
    assert (query.gpus[0].temperature_c, query.gpus[1].temperature_c) == (None, 37)


def test_gpus_that_print_the_same_sections_share_no_dict():
    q = parse_query(load("nvidia_smi_q_8xh100_535_183.txt"))
    first, second = q.gpus[0], q.gpus[1]
    assert first.ecc_volatile == second.ecc_volatile and first.ecc_volatile is not second.ecc_volatile
    assert first.ecc_aggregate is not second.ecc_aggregate
    assert first.remapped_rows == second.remapped_rows
    assert first.remapped_rows.histogram is not second.remapped_rows.histogram
    assert first.clocks_event_reasons is not second.clocks_event_reasons


def test_nvlink_lines_before_any_gpu_are_not_read():
    """`nvlink -s` reads a line once per output, but a link line is only read under a GPU: before
    one it is ignored, whatever its number (here too long for int())."""
    gpus = "GPU 0: H100 (UUID: GPU-1)\n    Link 0: 25 GB/s\nGPU 1: H100 (UUID: GPU-2)\n    Link 0: 25 GB/s\n"
    text = "Link " + "9" * 5000 + ": 1 GB/s\n" + gpus
    status = parse_nvlink_status(text)
    assert [(g.index, [(link.number, link.speed_gbps) for link in g.links]) for g in status.gpus] == [
        (0, [(0, 25.0)]),
        (1, [(0, 25.0)]),
    ]
