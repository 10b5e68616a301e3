"""`burnin fabric verify`: one line a finding, exit 0 clean / 1 findings / 2 input error."""

from __future__ import annotations

import json

from click.testing import CliRunner

from bringup.lab.fabric_sim import ibnetdiscover_text, planned_cables
from burnin.cli import main
from burnin.fabric.plan import parse_plan_yaml

PLAN = "speed: NDR\nfat_tree: {scalable_units: 1, nodes_per_unit: 2, rails: 2, spines: 1}\n"


def _files(tmp_path, cables_from=None):
    plan = parse_plan_yaml(PLAN, "p.yml")
    (tmp_path / "plan.yml").write_text(PLAN)
    cables = planned_cables(plan) if cables_from is None else cables_from(planned_cables(plan))
    (tmp_path / "fabric.txt").write_text(ibnetdiscover_text(plan, cables))
    return [
        "fabric",
        "verify",
        "--plan",
        str(tmp_path / "plan.yml"),
        "--ibnetdiscover",
        str(tmp_path / "fabric.txt"),
    ]


def test_a_clean_fabric_exits_0_and_says_pkeys_were_not_checked(tmp_path):
    res = CliRunner().invoke(main, _files(tmp_path))
    assert res.exit_code == 0, res.output
    assert (
        res.output.strip()
        == "0 finding(s); 6 cable(s) seen, 6 planned; 1 island(s); P_Keys not checked (no --pkeys)"
    )


def test_findings_exit_1_one_line_each(tmp_path):
    res = CliRunner().invoke(main, _files(tmp_path, lambda c: c[1:]))
    assert res.exit_code == 1, res.output
    assert res.output.splitlines()[0] == (
        "missing: no cable seen between gpu0001 mlx5_0 port 1 and switch su1-leaf0 port 1"
        " -> RESEAT: reseat the cable at both ends; replace it if the link stays down"
    )
    res = CliRunner().invoke(main, [*_files(tmp_path, lambda c: c[1:]), "--json"])
    assert res.exit_code == 1 and json.loads(res.output)["findings"][0]["action"] == "RESEAT"


def test_a_malformed_plan_or_output_exits_2_naming_it(tmp_path):
    args = _files(tmp_path)
    (tmp_path / "plan.yml").write_text(
        "fat_tree: {scalable_units: 0, nodes_per_unit: 2, rails: 2, spines: 1}\n"
    )
    res = CliRunner().invoke(main, args)
    assert (
        res.exit_code == 2
        and "plan.yml: line 1: field fat_tree.scalable_units: 0 is not a whole number" in res.output
    )
    (tmp_path / "plan.yml").write_text(PLAN)
    (tmp_path / "fabric.txt").write_text("ibwarn: no fabric\n")
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2 and "fabric.txt: not 'ibnetdiscover -p' output" in res.output
