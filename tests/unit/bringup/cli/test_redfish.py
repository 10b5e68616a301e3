"""`bringup discover | power | boot | bmc jobs` end to end: an inventory, fake vendor BMCs over
HTTP, the fleet store. One bad BMC fails one row; passwords appear nowhere."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from bringup.cli.main import main
from bringup.core.credentials import write_secret_file
from bringup.fleet.store import FleetStore
from tests.doubles.redfish_server import FakeBmc, FakeBmcServer, self_signed_tls, serving
from tests.fleet import walk_to
from tests.inventories import write_rack

PASSWORD = "Zq-rack-r07-pw"
WRONG = "Zq-not-the-pw"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rack:
    """A rack inventory in tmp_path whose hosts are fake BMCs (or a dead address)."""

    def __init__(
        self, tmp_path: Path, hosts: dict[str, FakeBmc | str], host_vars: dict[str, dict] | None = None
    ):
        self.db = tmp_path / "fleet.db"
        entries = {}
        for unit, (name, target) in enumerate(hosts.items(), start=1):
            address = target.url if isinstance(target, FakeBmc) else target
            entries[name] = {"bmc_address": address, "rack_unit": unit, **(host_vars or {}).get(name, {})}
        # bmc_allow_http: the fake BMCs serve plain HTTP
        self.dir = write_rack(
            tmp_path / "inventories",
            "r07",
            entries,
            password=PASSWORD,
            bmc_vendor="generic",
            bmc_allow_http=True,
        )
        write_secret_file(self.dir / "wrong.pass", WRONG + "\n")

    def run(self, *args: str):
        result = CliRunner(env={"COLUMNS": "250"}).invoke(
            main, ["--db", str(self.db), "--inventory-dir", str(self.dir), *args], catch_exceptions=False
        )
        return result

    def store(self) -> FleetStore:
        return FleetStore.open(str(self.db))


def all_text(rack: Rack, *outputs: str) -> str:
    store = rack.store()
    events = [
        json.dumps([e.reason, e.details], default=str)
        for n in store.list_nodes()
        for e in store.history(n.name)
    ]
    store.close()
    return "\n".join([*outputs, *events])


@pytest.fixture
def bmcs():
    fakes = {
        "gpu01": FakeBmc.from_fixture("dell-idrac9", password=PASSWORD),
        "gpu02": FakeBmc.from_fixture("hpe-ilo6", password=PASSWORD),
        "gpu03": FakeBmc.from_fixture("supermicro-x13", password=PASSWORD),
        "gpu04": FakeBmc.from_fixture("dell-idrac10", password=PASSWORD),
    }
    with FakeBmcServer(list(fakes.values())):
        yield fakes


def test_discover_a_rack_with_a_bad_password_and_a_dead_bmc(tmp_path, bmcs, caplog):
    caplog.set_level(logging.DEBUG)
    hosts = {**bmcs, "gpu05": f"http://127.0.0.1:{closed_port()}"}
    rack = Rack(tmp_path, hosts, {"gpu03": {"bmc_password": "file:wrong.pass"}})
    result = rack.run("discover", "--rack", "r07", "--json", "--retries", "0", "--connect-timeout", "1")
    assert result.exit_code == 1, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert {n: r["ok"] for n, r in rows.items()} == {
        "gpu01": True,
        "gpu02": True,
        "gpu03": False,
        "gpu04": True,
        "gpu05": False,
    }
    assert rows["gpu03"]["error"]["kind"] == "authentication failed"
    assert rows["gpu05"]["error"]["kind"] == "unreachable"
    assert rows["gpu01"]["serial"] == "CNFCP0041M0789" and rows["gpu01"]["vendor"] == "dell"
    assert rows["gpu02"]["macs"] == ["5c:ba:2c:10:aa:01", "5c:ba:2c:10:aa:02"]
    assert rows["gpu04"]["result"] == "discovered"
    assert rows["gpu01"]["hardware"]["event_log"][0]["message_id"] == "PSU0003"

    store = rack.store()
    states = {n.name: (n.state, n.serial) for n in store.list_nodes(rack="r07")}
    assert states["gpu01"] == ("discovered", "CNFCP0041M0789")
    assert states["gpu03"] == ("enrolled", None) and states["gpu05"] == ("enrolled", None)
    failed = store.history("gpu05")[-1]
    assert failed.kind == "discovery-failed" and failed.details["error"] == "unreachable"
    run_id = store.history("gpu01")[-1].run_id
    assert store.get_run(run_id).status == "partial"
    store.close()
    everything = all_text(rack, result.stdout, result.stderr, caplog.text)
    assert PASSWORD not in everything and WRONG not in everything


def test_discover_table_and_rediscovery(tmp_path, bmcs):
    rack = Rack(tmp_path, {"gpu01": bmcs["gpu01"]})
    first = rack.run("discover", "--rack", "r07")
    assert first.exit_code == 0, first.output
    assert "1 of 1 node(s) discovered" in first.stdout and "CNFCP0041M0789" in first.stdout
    again = rack.run("discover", "--rack", "r07", "--json")
    assert json.loads(again.stdout)[0]["result"] == "refreshed"


def test_a_swapped_board_is_flagged(tmp_path, bmcs):
    rack = Rack(tmp_path, {"gpu01": bmcs["gpu01"]})
    assert rack.run("discover", "--rack", "r07").exit_code == 0
    bmcs["gpu01"].resources["/redfish/v1/Chassis/System.Embedded.1"]["SerialNumber"] = "CNFCP0041M9999"
    flagged = rack.run("discover", "--rack", "r07", "--json")
    assert flagged.exit_code == 1
    row = json.loads(flagged.stdout)[0]
    assert (row["ok"], row["result"]) == (False, "serial-changed")
    store = rack.store()
    assert store.get_node("gpu01").serial == "CNFCP0041M0789"
    store.close()
    accepted = rack.run("discover", "--rack", "r07", "--json", "--accept-new-serial")
    assert json.loads(accepted.stdout)[0]["result"] == "rekeyed"


def test_provisioning_nic_rule_from_the_inventory(tmp_path, bmcs):
    rack = Rack(tmp_path, {"gpu01": bmcs["gpu01"]}, {"gpu01": {"provisioning_nic": "slot:5"}})
    rows = json.loads(rack.run("discover", "--rack", "r07", "--json").stdout)
    assert rows[0]["provisioning_nic"] == {
        "id": "NIC.Slot.5-1-1",
        "mac": "94:6d:ae:8c:12:40",
        "rule": "slot:5",
        "reason": "rule slot:5: slot 5 port 1",
    }


def test_bad_rule_is_a_clear_error(tmp_path, bmcs):
    rack = Rack(tmp_path, {"gpu01": bmcs["gpu01"]}, {"gpu01": {"provisioning_nic": "pci:3"}})
    result = rack.run("discover", "--rack", "r07")
    assert result.exit_code == 1 and "host gpu01: provisioning NIC rule 'pci:3'" in result.stderr


def test_power_cycle_records_events_and_notes_insecure(tmp_path):
    _, tls = self_signed_tls(tmp_path)  # --insecure means something only over TLS
    dell, hpe = (FakeBmc.from_fixture(f, password=PASSWORD) for f in ("dell-idrac9", "hpe-ilo6"))
    dell.power_delay = 0.2
    args = ("--rack", "r07", "--json", "--poll", "0.05", "--graceful-timeout", "5", "--timeout", "5")
    with serving(dell, hpe, tls=tls):
        rack = Rack(tmp_path, {"gpu01": dell, "gpu02": hpe})
        result = rack.run("power", "cycle", *args, "--insecure")
        status = rack.run("power", "status", "--rack", "r07", "--json", "--insecure")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert (rows["gpu01"]["before"], rows["gpu01"]["after"]) == ("On", "On")
    assert (rows["gpu02"]["before"], rows["gpu02"]["after"]) == ("Off", "On")
    assert "NOT verified" in result.stderr and "plain HTTP" not in result.stderr
    store = rack.store()
    event = store.history("gpu01")[-1]
    assert event.kind == "power" and event.reason == "power cycle: On -> On"
    assert event.details["insecure"] is True and "NOT verified" in event.details["tls"]
    assert event.details["steps"] == ["GracefulShutdown accepted", "On accepted"]
    store.close()
    assert [r["after"] for r in json.loads(status.stdout)] == ["On", "On"]


def test_golden_nodes_need_force(tmp_path, bmcs):
    rack = Rack(tmp_path, {"gpu01": bmcs["gpu01"], "gpu03": bmcs["gpu03"]})
    assert rack.run("discover", "--rack", "r07").exit_code == 0
    store = rack.store()
    walk_to(store, "gpu01", "golden", "test")
    store.close()
    dry = rack.run("power", "off", "--rack", "r07", "--dry-run", "--json")
    assert dry.exit_code == 0
    plan = {r["name"]: r["would"] for r in json.loads(dry.stdout)}
    assert plan["gpu01"].startswith("refuse: gpu01 is golden") and plan["gpu03"] == "power off"
    assert not bmcs["gpu01"].calls("POST") and not bmcs["gpu03"].calls("POST")

    refused = rack.run("power", "off", "--rack", "r07", "--json", "--graceful-timeout", "0", "--poll", "0.05")
    assert refused.exit_code == 1
    rows = {r["name"]: r for r in json.loads(refused.stdout)}
    assert rows["gpu01"]["error"]["kind"] == "refused" and rows["gpu03"]["after"] == "Off"
    assert not bmcs["gpu01"].calls("POST")
    forced = rack.run(
        "power", "off", "--rack", "r07", "--nodes", "gpu01", "--force", "--graceful-timeout", "0"
    )
    assert forced.exit_code == 0, forced.output
    assert [c.body["ResetType"] for c in bmcs["gpu01"].calls("POST", "Reset")] == ["ForceOff"]
    store = rack.store()
    assert store.history("gpu01")[-1].details["forced"] is True
    store.close()


def test_boot_pxe_cd_and_eject(tmp_path, bmcs):
    rack = Rack(tmp_path, {"gpu04": bmcs["gpu04"], "gpu03": bmcs["gpu03"]})
    pxe = rack.run("boot", "pxe", "--rack", "r07", "--json")
    assert pxe.exit_code == 0, pxe.output
    rows = {r["name"]: r for r in json.loads(pxe.stdout)}
    assert rows["gpu04"]["boot"]["pending"] and rows["gpu04"]["boot"]["patched"].endswith("/Settings")
    assert rows["gpu03"]["boot"]["verified"] and "power" not in rows["gpu03"]

    iso = "http://10.20.0.1/images/installer.iso"
    cd = rack.run("boot", "cd", "--rack", "r07", "--nodes", "gpu03", "--iso", iso, "--poll", "0.05", "--json")
    assert cd.exit_code == 0, cd.output
    row = json.loads(cd.stdout)[0]
    assert row["media"]["image"] == iso and row["boot"]["target"] == "Cd" and row["power"]["after"] == "On"
    assert [c.body["ResetType"] for c in bmcs["gpu03"].calls("POST", "Reset")] == ["ForceRestart"]
    table = rack.run("boot", "eject", "--rack", "r07", "--nodes", "gpu03")
    assert table.exit_code == 0 and "media ejected" in table.stdout
    store = rack.store()
    assert [e.kind for e in store.history("gpu03")][-3:] == ["boot", "boot", "boot"]
    store.close()
    assert rack.run("boot", "cd", "--rack", "r07").exit_code == 2  # --iso missing: usage error


def test_bmc_jobs_list_and_clear(tmp_path, bmcs):
    dell = bmcs["gpu01"]
    m = "/redfish/v1/Managers/iDRAC.Embedded.1"
    dell.resources[f"{m}/Jobs/JID_912345678901"] = {
        "@odata.id": f"{m}/Jobs/JID_912345678901",
        "Id": "JID_912345678901",
        "JobState": "Scheduled",
        "JobType": "BIOSConfiguration",
        "Name": "Configure: BIOS.Setup.1-1",
    }
    dell.resources[f"{m}/Jobs"]["Members"].append({"@odata.id": f"{m}/Jobs/JID_912345678901"})
    rack = Rack(tmp_path, {"gpu01": dell, "gpu02": bmcs["gpu02"]})
    blocked = rack.run("boot", "pxe", "--rack", "r07", "--nodes", "gpu01", "--json")
    assert json.loads(blocked.stdout)[0]["error"]["kind"] == "pending job"
    listed = rack.run("bmc", "jobs", "--rack", "r07")
    assert listed.exit_code == 1  # gpu02 is an iLO: not supported
    assert "JID_912345678901 BIOSConfiguration Scheduled" in listed.stdout
    assert "not supported by this BMC" in listed.stdout
    cleared = rack.run("bmc", "jobs", "--rack", "r07", "--nodes", "gpu01", "--clear", "--json")
    assert cleared.exit_code == 0 and json.loads(cleared.stdout)[0]["jobs"] == []
    assert rack.run("boot", "pxe", "--rack", "r07", "--nodes", "gpu01").exit_code == 0
    store = rack.store()
    assert "jobs-cleared" in [e.kind for e in store.history("gpu01")]
    store.close()


def test_unknown_nodes_and_missing_credentials(tmp_path, bmcs, monkeypatch):
    rack = Rack(
        tmp_path, {"gpu01": bmcs["gpu01"], "gpu02": bmcs["gpu02"]}, {"gpu02": {"bmc_password": "env:R07_PW"}}
    )
    monkeypatch.delenv("R07_PW", raising=False)
    unknown = rack.run("power", "status", "--rack", "r07", "--nodes", "gpu01,gpu99")
    assert unknown.exit_code == 1 and "has no host(s) gpu99" in unknown.stderr
    rows = json.loads(rack.run("power", "status", "--rack", "r07", "--json").stdout)
    assert rows[0]["after"] == "On"
    assert rows[1]["error"] == {
        "kind": "inventory problem",
        "message": "environment variable R07_PW is not set",
    }


def test_a_failed_power_or_boot_is_an_event_on_the_node(tmp_path, bmcs):
    rack = Rack(tmp_path, {"gpu01": bmcs["gpu01"], "gpu05": f"http://127.0.0.1:{closed_port()}"})
    fast = ("--retries", "0", "--connect-timeout", "1", "--json")
    power = rack.run("power", "on", "--rack", "r07", "--poll", "0.05", *fast)
    boot = rack.run("boot", "pxe", "--rack", "r07", *fast)
    assert power.exit_code == 1 and boot.exit_code == 1
    store = rack.store()
    failed = [(e.kind, e.reason.split(":")[0], e.details["error"]) for e in store.history("gpu05")[-2:]]
    assert failed == [("power-failed", "power on", "unreachable"), ("boot-failed", "boot pxe", "unreachable")]
    assert [e.kind for e in store.history("gpu01")[-2:]] == ["power", "boot"]
    store.close()


def test_power_and_boot_refuse_a_node_another_run_holds_and_act_on_the_others(tmp_path, bmcs):
    """A power cycle or a PXE boot in the middle of a node's burn-in destroys the burn-in: the
    node another live run holds is refused (naming that run), the rest carry on, and the acting
    command holds its own nodes while it works."""
    from bringup.fleet.runs import run_ledger

    rack = Rack(tmp_path, {"gpu01": bmcs["gpu01"], "gpu03": bmcs["gpu03"]})
    assert rack.run("discover", "--rack", "r07").exit_code == 0
    store = rack.store()
    with run_ledger(store, "burnin", "r07", nodes=["gpu01"]) as burnin:
        dry = rack.run("power", "off", "--rack", "r07", "--dry-run", "--json")
        plan = {r["name"]: r["would"] for r in json.loads(dry.stdout)}
        assert plan["gpu01"].startswith(f"refuse: gpu01 is held by burnin run {burnin.id}")
        off = rack.run("power", "off", "--rack", "r07", "--json", "--graceful-timeout", "0", "--poll", "0.05")
        boot = rack.run("boot", "pxe", "--rack", "r07", "--json")
    assert off.exit_code == 1 and boot.exit_code == 1
    for result in (off, boot):
        rows = {r["name"]: r for r in json.loads(result.stdout)}
        assert rows["gpu01"]["error"]["kind"] == "refused"
        assert f"held by burnin run {burnin.id}" in rows["gpu01"]["error"]["message"]
        assert rows["gpu03"]["ok"]
    assert not bmcs["gpu01"].calls("POST") and not bmcs["gpu01"].calls("PATCH")
    runs = {r.kind: r for r in store_runs(store)}
    assert runs["power"].status in ("done", "failed") and runs["power"].params["nodes"] == ["gpu03"]
    assert "boot" in runs
    store.close()


def store_runs(store):
    from sqlalchemy import select

    from bringup.fleet.models import Run

    with store.reading() as s:
        return list(s.execute(select(Run).order_by(Run.id)).scalars())


def test_discover_names_a_node_whose_bmc_lists_other_gpus_than_its_profile(tmp_path):
    """An XE9680 with eight H100s fits h100-sxm-8x400g: no line; an XL675d with eight A100s
    written down as h100-sxm-8x400g: one line naming both (docs/platforms.md)."""
    fakes = {
        "gpu01": FakeBmc.from_fixture("dell-idrac9-gpus", password=PASSWORD),
        "gpu02": FakeBmc.from_fixture("hpe-xl675d-a100", password=PASSWORD),
    }
    with FakeBmcServer(list(fakes.values())):
        rack = Rack(tmp_path, fakes)
        text = rack.run("discover", "--rack", "r07")
        rows = {r["name"]: r for r in json.loads(rack.run("discover", "--rack", "r07", "--json").stdout)}
    assert text.exit_code == 0, text.output
    assert (
        "gpu02: profile from the BMC: ProLiant XL675d Gen10 Plus: 8 x NVIDIA A100-SXM4-40GB -> no profile"
        in text.stdout
    )
    assert "its profile h100-sxm-8x400g expects 8 x NVIDIA H100 80GB HBM3" in text.stdout
    assert "gpu01: profile from the BMC" not in text.stdout
    assert rows["gpu01"]["profile_from_bmc"]["profiles"] == ["h100-sxm-8x400g"]
    assert rows["gpu02"]["profile_from_bmc"]["mismatch"].startswith(
        "node gpu02: the BMC lists 8 x NVIDIA A100"
    )
