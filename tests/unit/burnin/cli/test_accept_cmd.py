"""`burnin accept` on the command line: options checked before anything runs, a bad order is one
line naming its file, and a delivery with nothing left to test says so."""

from __future__ import annotations

import yaml
from click.testing import CliRunner

from burnin.accept import ledger
from burnin.cli import main
from tests.unit.burnin.golden.test_rules import NODES, RACK, FleetRack


def invoke(fleet: FleetRack, *args: str):
    base = ["--db", str(fleet.db), "--inventory-dir", str(fleet.dir)]
    return CliRunner().invoke(main, [*base, "accept", "--rack", RACK, *args])


def write_order(fleet: FleetRack, name: str = "po42", **extra) -> None:
    data = {"name": name, "nodes": {"count": len(NODES)}, "profiles": {"h100-sxm-8x400g": {}}, **extra}
    (fleet.dir / "deliveries").mkdir(exist_ok=True)
    (fleet.dir / "deliveries" / f"{name}.yml").write_text(yaml.safe_dump(data))


def test_a_soak_that_is_not_a_duration_is_a_usage_error(tmp_path):
    res = invoke(FleetRack(tmp_path), "--delivery", "po42", "--soak", "3 fortnights")
    assert res.exit_code == 2 and "--soak" in res.output


def test_an_order_with_problems_is_refused_naming_its_file_and_field(tmp_path):
    fleet = FleetRack(tmp_path)
    write_order(fleet, acceptance={"soak": "forever"})
    res = invoke(fleet, "--delivery", "po42")
    assert res.exit_code == 1
    assert "po42.yml" in res.output and "acceptance.soak" in res.output
    assert fleet.store.list_nodes(RACK)[0].state == "burnin"  # nothing ran
    res = invoke(fleet, "--delivery", "nope")
    assert res.exit_code == 1 and "no such delivery" in res.output and "po42" in res.output


def test_a_delivery_whose_nodes_were_all_accepted_has_nothing_to_test(tmp_path):
    fleet = FleetRack(tmp_path)
    write_order(fleet)
    run = fleet.store.start_run(ledger.ACCEPT_KIND, RACK, {"delivery": "po42", "nodes": list(NODES)})
    fleet.store.finish_run(run.id, "done")
    for node in NODES:
        details = {"delivery": "po42", "acceptance": run.id, "decision": "accepted", "reasons": []}
        fleet.store.record_event(node, ledger.DECISION_EVENT, "accepted", details=details)
    res = invoke(fleet, "--delivery", "po42", "--out", str(tmp_path / "out"))
    assert res.exit_code == 0, res.output
    assert "every node was accepted" in res.output and f"acceptance #{run.id}" in res.output


def test_reasons_are_printed_as_text_not_as_markup():
    """A slot like '/dev/nvme3' in brackets once crashed the summary table (rich read it as a
    closing tag)."""
    from dataclasses import replace

    from bringup.cli.ui import console
    from burnin.accept.decide import REJECTED, NodeDecision, Reason
    from burnin.cli.accept import _print
    from tests.unit.burnin.accept.acceptance_result import result

    nvme = Reason(
        "burn-in", "nvme_health", "critical warning", "RMA", slot="/dev/nvme3 (serial S64H)", serial="S64H"
    )
    shown = replace(result(), decisions=(NodeDecision("n1", "SN1", REJECTED, (nvme,)),))
    with console.capture() as captured:
        _print(shown)
    assert "[/dev/nvme3" in captured.get()  # shown as written (the table may fold the rest)
