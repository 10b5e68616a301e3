"""The nightly's result: its exit status, one line per node, and --notify feeding the summary as
JSON to a real shell command (the night itself runs in tests/lab/test_nightly_lab.py)."""

from __future__ import annotations

import json

from burnin.service.nightly import NightlyResult, NightRow, notify


def night(*rows: NightRow) -> NightlyResult:
    return NightlyResult("r01", 12, list(rows))


def test_exit_status_is_1_only_when_a_tested_node_is_not_golden_again():
    back = NightRow("n01", "tested", "repaired", "repair", "golden", "PASS", "resume")
    failed = NightRow(
        "n02", "tested", "repaired", "repair", "failed", "FAIL", "keep drained", "gpu_inventory: 7 GPU(s)"
    )
    partner = NightRow("n03", "partner", "partner", "golden", "failed", "FAIL", "keep drained")
    not_run = NightRow(
        "n04", "idle", "idle golden node", "golden", "golden", "not run", "-", "job 4 preempted"
    )
    assert night(back, partner, not_run).exit_code == 0  # a partner's result is not the night's verdict
    assert night(back, failed).exit_code == 1
    assert night().exit_code == 0
    assert (
        failed.line() == "n02: tested; repair -> failed; FAIL; slurm: keep drained; gpu_inventory: 7 GPU(s)"
    )
    assert not_run.line() == "n04: idle; golden; not run; slurm: -; job 4 preempted"


def test_notify_pipes_the_summary_as_json(tmp_path):
    out = tmp_path / "sent.json"
    result = night(NightRow("n01", "tested", "repaired", "repair", "golden", "PASS", "resume"))
    assert notify(f"cat > {out}", result.summary()) == "notify: sent"
    sent = json.loads(out.read_text())
    assert (sent["rack"], sent["run"], sent["exit"]) == ("r01", 12, 0)
    assert sent["lines"] == ["n01: tested; repair -> golden; PASS; slurm: resume"]


def test_a_failing_notify_command_is_reported_not_raised():
    assert notify("echo 'webhook: 503' >&2; exit 7", {}) == "notify: exited 7: webhook: 503"


def test_the_rack_views_carry_each_hosts_inventory_profile(tmp_path):
    """The nightly chooses partners of the tested node's profile: the profile is the inventory
    host's (the one the stages load, and the nccl stage soaks by)."""
    from bringup.fleet.store import FleetStore
    from bringup.inventory.rack import load_rack
    from burnin.service.nightly import rack_views
    from tests.inventories import write_rack

    inv = tmp_path / "inventories"
    hosts = {f"gpu00{i}": {"bmc_address": f"10.9.1.{i}", "rack_unit": i} for i in (1, 2)}
    hosts["gpu002"]["profile"] = "h100-other"
    write_rack(inv, "ra", hosts)
    shipped = (inv / "profiles" / "h100-sxm-8x400g.yml").read_text()
    (inv / "profiles" / "h100-other.yml").write_text(
        shipped.replace("name: h100-sxm-8x400g", "name: h100-other")
    )
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    for name in hosts:
        store.enroll(name, "ra", "h100-sxm-8x400g")
    rack, problems = load_rack("ra", inv)
    assert rack is not None, problems
    views = rack_views(store, rack, {})
    assert [(v.name, v.profile) for v in views] == [("gpu001", "h100-sxm-8x400g"), ("gpu002", "h100-other")]


def test_the_summary_says_what_the_plan_noted():
    result = NightlyResult("r01", 12, [], notes=["profile b: no golden partner free of the 2 wanted for n01"])
    assert result.summary()["notes"] == ["profile b: no golden partner free of the 2 wanted for n01"]
