"""`burnin fabric ufm-events`: the log, the plan and the ib stage's results read from files or
the store; proposals printed (or JSON), exit 0 nothing to do / 1 proposals / 2 an input error."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

from bringup.fleet.store import FleetStore
from burnin.cli import main
from burnin.fabric.ufm import UfmError
from burnin.fabric.ufm_live import loads_from_file, loads_from_store, ufm_report, zone_of
from tests.unit.burnin.fabric.test_ufm import FLAPPER, PLAN, REST
from tests.unit.burnin.parsers._samples import SAMPLES_DIR

REPAIRED = {
    "node": "gpu0001",
    "check": "ib_bandwidth",
    "time": "2024-05-29T10:00:00+00:00",
    "metrics": {"ports": {"mlx5_0": {"verdict": "PASS"}}},
}


def _files(tmp_path, results=None):
    (tmp_path / "plan.yml").write_text(PLAN)
    args = ["fabric", "ufm-events", "--events", str(SAMPLES_DIR / REST), "--plan", str(tmp_path / "plan.yml")]
    if results is not None:
        (tmp_path / "ib.json").write_text(json.dumps(results))
        args += ["--ib-results", str(tmp_path / "ib.json")]
    return args


def test_proposals_are_printed_one_line_a_port_and_exit_1(tmp_path):
    res = CliRunner().invoke(main, _files(tmp_path))
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith(
        f"flapping: {FLAPPER}, 4 event(s), last 2024-05-28 08:19:45Z -> DISABLE switch su1-leaf0"
    )
    assert lines[-1] == (
        "3 port(s) to act on; 12 event(s) read, 6 of no kind judged here, 0 naming no port;"
        " proposals only, nothing applied"
    )


def test_a_results_file_with_a_later_clean_load_turns_the_disable_into_a_re_enable(tmp_path):
    before = json.loads(CliRunner().invoke(main, [*_files(tmp_path, []), "--json"]).output)
    assert [p["action"] for p in before["cases"][0]["proposals"]] == ["disable", "ticket"]
    res = CliRunner().invoke(main, [*_files(tmp_path, [REPAIRED]), "--json"])
    after = json.loads(res.output)["cases"]
    flap = next(c for c in after if c["ends"] == FLAPPER)
    assert [p["action"] for p in flap["proposals"]] == ["re-enable"]
    assert flap["repaired_by"] == {
        "node": "gpu0001",
        "hca": "mlx5_0",
        "port": 1,
        "at": "2024-05-29T10:00:00+00:00",
    }


def test_the_store_gives_the_newest_ib_result_of_the_nodes_the_log_names(tmp_path):
    store = FleetStore(f"sqlite:///{tmp_path / 'fleet.db'}")
    store.enroll("gpu0001", "R01", "h100-sxm-8x400g")
    (tmp_path / "plan.yml").write_text(PLAN)
    events, plan = SAMPLES_DIR / REST, tmp_path / "plan.yml"

    def actions():
        report = ufm_report(events, plan, None, store)
        return [p.action for p in next(c for c in report.cases if c.ends == FLAPPER).proposals]

    assert actions() == ["disable", "ticket"]  # no ib result yet
    store.add_result(
        "gpu0001",
        "ib",
        "ib_bandwidth",
        "PASS",
        metrics=REPAIRED["metrics"],
        time=datetime(2024, 5, 29, 10, tzinfo=UTC),
    )
    assert actions() == ["re-enable"]
    assert loads_from_store(store, {"gpu0001", "gpu9999"})[0].node == "gpu0001"  # unknown nodes skipped


def test_unreadable_inputs_exit_2_naming_them(tmp_path):
    res = CliRunner().invoke(main, ["fabric", "ufm-events", "--events", str(tmp_path / "none.json")])
    assert res.exit_code == 2 and "none.json: cannot read the UFM event log" in res.output
    (tmp_path / "ib.json").write_text("{}")
    with pytest.raises(UfmError, match="not a JSON list of results"):
        loads_from_file(tmp_path / "ib.json")
    with pytest.raises(UfmError, match="--tz Mars/Olympus: not a time zone name"):
        zone_of("Mars/Olympus")


def test_a_log_with_nothing_to_act_on_exits_0(tmp_path):
    quiet = tmp_path / "quiet.json"
    rows = json.loads("\n".join((SAMPLES_DIR / REST).read_text().splitlines()[1:]))
    quiet.write_text(json.dumps(rows[:2]))  # the two multicast events of UFM's documentation
    res = CliRunner().invoke(main, ["fabric", "ufm-events", "--events", str(quiet)])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("0 port(s) to act on; 2 event(s) read, 2 of no kind judged here")
