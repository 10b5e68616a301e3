"""The `nvidia-smi -q` tree reads 'Key : value' lines without a regex now (the parse
was most of a preflight's judging at 1,000 nodes); it must read every line as the regex did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers.nvidia_smi import _ALL_INACTIVE_RE, _GPU_LINE_RE, _all_inactive, _gpu_line
from burnin.parsers.smi_tree import KV_RE, tree
from tests.paths import REPO


def by_regex(body: str) -> tuple[str, str | None]:
    m = KV_RE.match(body)
    return (m.group(1).strip(), (m.group(2) or "").strip()) if m else (body, None)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab :\t0.\u00a0\x1c-")), max_size=14))
def test_a_line_reads_as_the_regex_reads_it(line):
    body = line.expandtabs(4).strip()
    if not body:
        return
    (node,) = tree([line]).children
    assert (node.key, node.value) == by_regex(body)


def test_the_recorded_h100_output_reads_as_the_regex_reads_it():
    text = (REPO / "bringup/lab/standins/samples/nvidia_smi_q_8xh100_535_183.txt").read_text()
    lines = [line for line in text.splitlines() if line.strip()]
    flat = []
    stack = list(reversed(tree(lines).children))
    while stack:
        node = stack.pop()
        flat.append((node.key, node.value))
        stack.extend(reversed(node.children))
    assert flat == [by_regex(line.expandtabs(4).strip()) for line in lines]


NVLINK_PIECES = ["GPU ", "GPU", "0", ": ", "H100 ", "(UUID: GPU-1)", "all links are inactive", "ALL LINKS",
                 " are inactive", "\u0130", "\u0131", "\u212a", " ", "\t", "Link 3", "26.562 GB/s", "x"]  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(NVLINK_PIECES), max_size=8).map("".join))
def test_nvlink_lines_read_as_the_regexes_read_them(line):
    """`nvlink -s` is read without a regex for most lines: the same GPU lines and the
    same 'all links are inactive' lines as the regexes, in any case and any script."""
    assert _all_inactive(line) == bool(_ALL_INACTIVE_RE.search(line))
    m = _GPU_LINE_RE.match(line.strip())
    assert (_gpu_line(line) is None) == (m is None)
