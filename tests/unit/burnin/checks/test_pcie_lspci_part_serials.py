"""A downtrained card in lspci -vv is named by its VPD serial, so a vendor's RMA desk can find the part."""

from __future__ import annotations

from burnin.checks.base import CommandOutput, judge
from burnin.checks.pcie_lspci import LspciLinks
from burnin.parsers.lspci import parse_lspci_vv
from burnin.result import Severity, Verdict
from tests.profiles import shipped
from tests.unit.burnin.parsers._samples import load

PROFILE = shipped()


def test_a_downtrained_hca_in_lspci_is_named_by_its_vpd_serial() -> None:
    # lspci -vv prints the card's Vital Product Data: '[SN] Serial number: MT2304XZ02VD'.
    text = load("lspci_vv_cx7_downtrained_16gt_x8.txt")
    result = judge(LspciLinks(), CommandOutput(stdout=text), PROFILE)
    assert result.verdict is Verdict.FAIL
    critical = [f for f in result.findings if f.severity is Severity.CRITICAL]
    assert critical and all("serial MT2304XZ02VD" in f.subject for f in critical)
    assert [d.serial for d in parse_lspci_vv(load("lspci_vv_cx7_gen5_x16_ok.txt"))] == ["MT2340J88735"]
