"""The `nvidia-smi -q` tree reads 'Key : value' lines without a regex now (issue 18: the parse
was most of a preflight's judging at 1,000 nodes); it must read every line as the regex did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from burnin.parsers.nvidia_smi import _KV_RE, _tree
from tests.paths import REPO


def by_regex(body: str) -> tuple[str, str | None]:
    m = _KV_RE.match(body)
    return (m.group(1).strip(), (m.group(2) or "").strip()) if m else (body, None)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab :\t0.\u00a0\x1c-")), max_size=14))
def test_a_line_reads_as_the_regex_reads_it(line):
    body = line.expandtabs(4).strip()
    if not body:
        return
    (node,) = _tree([line]).children
    assert (node.key, node.value) == by_regex(body)


def test_the_recorded_h100_output_reads_as_the_regex_reads_it():
    text = (REPO / "bringup/lab/standins/samples/nvidia_smi_q_8xh100_535_183.txt").read_text()
    lines = [line for line in text.splitlines() if line.strip()]
    flat = []
    stack = list(reversed(_tree(lines).children))
    while stack:
        node = stack.pop()
        flat.append((node.key, node.value))
        stack.extend(reversed(node.children))
    assert flat == [by_regex(line.expandtabs(4).strip()) for line in lines]
