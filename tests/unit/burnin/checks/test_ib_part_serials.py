"""A down IB port is named by its HCA's node GUID (ibstat's 'Node GUID'), so a vendor's RMA desk can
find the part."""

from __future__ import annotations

from bringup.profiles.load import apply_overrides
from burnin.checks.base import CommandOutput, judge
from burnin.checks.ib import IbPorts
from burnin.parsers.ibstat import parse_ibstat
from burnin.result import Severity
from tests.paths import REPO
from tests.profiles import shipped

PROFILE = shipped()


def test_a_down_ib_port_is_named_by_its_hca_node_guid() -> None:
    # The lab's 8x CX-7 NDR recording with mlx5_6 down (the corpus's H100 ibstat samples are Ethernet).
    text = (
        REPO / "bringup/lab/standins/samples/ibstat_8xh100_cx7_ndr_ib_mlx5_6_down_polling_DERIVED.txt"
    ).read_text()
    text = text.split("\n", 1)[1]
    hcas = {h.name: h.node_guid for h in parse_ibstat(text).hcas}
    result = judge(IbPorts(), CommandOutput(stdout=text, rc=0), apply_overrides(PROFILE, ()))
    down = [f for f in result.findings if f.severity is Severity.CRITICAL and " port " in f.subject]
    assert down
    for f in down:
        guid = hcas[f.subject.split()[0]]
        assert guid and f"node GUID {guid}" in f.message and f"Node GUID: {guid}" in f.evidence
    assert result.metrics["node_guids"] == {
        n: g for n, g in hcas.items() if g and n in result.metrics["node_guids"]
    }
