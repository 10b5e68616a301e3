"""A plain-HTTP BMC is refused unless allowed, and never recorded as TLS.

Real HTTP against tests/doubles/redfish_server.py (served without TLS), a real inventory, the
fleet store.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bringup.cli.main import main
from bringup.fleet.store import FleetStore
from bringup.inventory.rack import load_rack
from bringup.redfish.endpoint import TransportOptions
from bringup.redfish.rack import RackJob, discover_rack
from tests.doubles.redfish_server import FakeBmc, serving
from tests.inventories import write_rack

PASSWORD = "Zq-plain-http-pw"


def inventory(tmp_path: Path, hosts: dict[str, dict]) -> Path:
    return write_rack(tmp_path / "inventories", "r07", hosts, password=PASSWORD, bmc_vendor="generic")


def discover(tmp_path: Path, inv: Path, **transport) -> tuple[FleetStore, object]:
    store = FleetStore.open(str(tmp_path / "fleet.db"))
    job = RackJob(store, "r07", inv, transport=TransportOptions(retries=0, **transport))
    return store, discover_rack(job)


def test_a_plain_http_bmc_is_refused_without_the_allowance(tmp_path):
    allowed, refused = (FakeBmc.from_fixture("dell-idrac9", password=PASSWORD) for _ in range(2))
    with serving(allowed, refused):
        assert refused.url.startswith("http://")
        inv = inventory(
            tmp_path,
            {
                "gpu01": {"bmc_address": allowed.url, "rack_unit": 1, "bmc_allow_http": True},
                "gpu02": {"bmc_address": refused.url, "rack_unit": 2},
            },
        )
        store, result = discover(tmp_path, inv)
    rows = {r["name"]: r for r in result.rows}
    assert rows["gpu01"]["ok"] and not rows["gpu02"]["ok"]
    message = rows["gpu02"]["error"]["message"]
    assert "plain HTTP" in message and "bmc_allow_http: true" in message and "--allow-http" in message
    assert refused.requests == []  # not one request, so no password in cleartext
    assert PASSWORD not in message
    store.close()


def test_an_allowed_plain_http_bmc_is_recorded_as_no_tls_and_warned_about(tmp_path):
    bmc = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    with serving(bmc):
        inv = inventory(tmp_path, {"gpu01": {"bmc_address": bmc.url, "rack_unit": 1, "bmc_allow_http": True}})
        store, result = discover(tmp_path, inv)
    assert result.rows[0]["ok"], result.rows
    assert any("plain HTTP" in w and "gpu01" in w for w in result.warnings)
    run = store.get_run(result.run_id)
    assert run.params["tls"] == "none (plain HTTP)" and run.params["insecure"] is True
    events = store.history("gpu01")
    with_tls = [e for e in events if e.details and "tls" in e.details]
    assert with_tls and all(e.details["tls"] == "none (plain HTTP)" for e in with_tls)
    assert not any("verified" in str(e.details.get("tls")) for e in with_tls)
    store.close()


def test_allow_http_on_the_command_allows_every_host(tmp_path):
    bmc = FakeBmc.from_fixture("hpe-ilo6", password=PASSWORD)
    with serving(bmc):
        inv = inventory(tmp_path, {"gpu01": {"bmc_address": bmc.url, "rack_unit": 1}})
        store, result = discover(tmp_path, inv, allow_http=True)
    assert result.rows[0]["ok"], result.rows
    assert result.warnings
    assert store.history("gpu01")[-1].details["tls"] == "none (plain HTTP)"
    store.close()


def test_inventory_check_warns_about_plain_http_bmcs(tmp_path):
    inv = inventory(
        tmp_path,
        {
            "gpu01": {"bmc_address": "http://10.1.0.1:8000", "rack_unit": 1, "bmc_allow_http": True},
            "gpu02": {"bmc_address": "10.1.0.2", "rack_unit": 2},
            "gpu03": {"bmc_address": "HTTP://10.1.0.3", "rack_unit": 3},
        },
    )
    rack, problems = load_rack("r07", inv)
    assert rack is not None  # a warning, not an error
    plain = [p for p in problems if "plain HTTP" in p.message]
    assert [(p.host, p.field, p.warning) for p in plain] == [
        ("gpu01", "bmc_address", True),
        ("gpu03", "bmc_address", True),
    ]
    assert all(p.file == str(inv / "r07.yml") for p in plain)
    assert "refused unless bmc_allow_http" in plain[1].message


def test_every_command_over_plain_http_prints_the_warning(tmp_path):
    bmc = FakeBmc.from_fixture("dell-idrac9", password=PASSWORD)
    with serving(bmc):
        inv = inventory(tmp_path, {"gpu01": {"bmc_address": bmc.url, "rack_unit": 1, "bmc_allow_http": True}})
        base = ["--db", str(tmp_path / "fleet.db"), "--inventory-dir", str(inv)]
        runs = [
            CliRunner().invoke(main, [*base, *args, "--rack", "r07", "--json"], catch_exceptions=False)
            for args in (["discover"], ["power", "status"], ["bmc", "jobs"])
        ]
    for run in runs:
        assert run.exit_code == 0, run.output
        assert "warning:" in run.stderr and "plain HTTP" in run.stderr and "gpu01" in run.stderr
