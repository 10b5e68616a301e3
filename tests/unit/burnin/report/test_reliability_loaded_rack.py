"""The reliability section `burnin report --html` adds loaded the rack's inventory a
second time (6.6 s of the section at 10,000 nodes, `benchmarks/report.py`); it now takes the rack
the report already loaded."""

from __future__ import annotations

from bringup.fleet.models import utcnow
from bringup.fleet.select import load_valid_rack
from burnin.report.reliability import fleet_section
from tests.unit.burnin.golden.test_rules import RACK, FleetRack


def test_the_section_takes_the_rack_the_report_already_loaded(tmp_path):
    fleet = FleetRack(tmp_path)
    fleet.results("gpu001")
    fleet.results("gpu002", fail="gpu")
    rack, _ = load_valid_rack(RACK, fleet.dir)
    gpus = {p.gpu.count for p in rack.profiles.values()}
    (fleet.dir / f"{RACK}.yml").unlink()  # read again, the section would find no inventory
    section = fleet_section(fleet.store, RACK, fleet.dir, utcnow(), loaded=rack)
    assert f"GPUs per node: {gpus.pop()} (profile h100-sxm-8x400g (gpu.count))" in section.body
    assert 'id="failures-chart"' in section.body and 'data-kind="gpu"' in section.body
