"""The nightly's HTML report carries the rack's reliability section, the same section as
`burnin report --html` (the night itself runs in tests/lab/test_nightly_lab.py)."""

from __future__ import annotations

import re
from datetime import timedelta

from bringup.fleet.models import utcnow
from bringup.inventory.rack import load_rack
from burnin.service.nightly import NightlyRequest, NightlyResult, write_reports
from tests.unit.burnin.golden.test_rules import RACK, FleetRack
from tests.unit.burnin.history.writer import PastWriter


def test_the_nightly_html_report_has_the_racks_reliability_section(tmp_path):
    fleet = FleetRack(tmp_path)
    for node in fleet.store.list_nodes(rack=RACK):
        fleet.store.update_node(node.name, created_at=utcnow() - timedelta(days=60))
    fleet.results("gpu001")
    assert fleet.run("golden", "--rack", RACK).exit_code == 0
    w = PastWriter(fleet.store)
    w.fail("gpu001", utcnow() - timedelta(days=3), "GPU 5")
    rack, _ = load_rack(RACK, fleet.dir)
    result = NightlyResult(RACK, run_id=7)
    write_reports(fleet.store, rack, NightlyRequest(RACK, report_dir=tmp_path / "out"), result, fleet.dir)
    html_path, xml_path = (tmp_path / "out" / f"nightly-{RACK}-run7{s}" for s in (".html", ".xml"))
    assert result.reports == [str(html_path), str(xml_path)]
    html = html_path.read_text()
    (section,) = re.findall(r'<section id="reliability".*?</section>', html, re.S)
    assert "Fleet reliability (last 28 days)" in section
    assert re.search(r"4 nodes, [\d.,]+ node-days, 1 failures", section)
    assert 'id="failures-chart"' in section and 'id="mttf-chart"' in section
    assert '<rect class="bar" data-kind="gpu"' in section
    # the rack's profile sets the GPUs per node of the MTTF figures
    assert "GPUs per node: 8 (profile h100-sxm-8x400g (gpu.count))" in section
