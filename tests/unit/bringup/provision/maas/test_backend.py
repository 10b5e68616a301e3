"""The MAAS backend against the MAAS API test double (real HTTP), which powers machines through
fake Redfish BMCs (tests/doubles/redfish_server.py, real HTTP too)."""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import asdict
from pathlib import Path

import pytest
import requests
import yaml

from bringup.core.credentials import write_secret_file
from bringup.provision.backend import ProvisionTarget
from bringup.provision.maas import (
    ApiKey,
    MaasBackend,
    MaasClient,
    MaasError,
    oauth_header,
)
from tests.doubles.maas import DEPLOYED, FAILED_COMMISSIONING, FAILED_DEPLOYMENT, READY, MaasDouble
from tests.doubles.redfish_server import FakeBmc, serving

BMC_PASSWORD = "Bmc-Pw-7c1e9a-not-in-logs"
SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForMaasTests bringup@test"
MACS = ("52:54:00:aa:00:01", "52:54:00:aa:00:02")
SYSTEM = "/redfish/v1/Systems/System.Embedded.1"


@pytest.fixture
def bmcs():
    pair = [FakeBmc.from_fixture("dell-idrac9", password=BMC_PASSWORD) for _ in range(2)]
    for bmc in pair:
        bmc.resources[SYSTEM]["PowerState"] = "Off"
    with serving(*pair):
        yield pair


@pytest.fixture
def maas():
    with MaasDouble() as double:
        yield double


@pytest.fixture
def inv(tmp_path, maas, monkeypatch) -> Path:
    write_secret_file(tmp_path / "maas.key", maas.api_key + "\n")
    monkeypatch.setenv("MAAS_TEST_BMC_PW", BMC_PASSWORD)
    return tmp_path


def rack_vars(maas: MaasDouble, **extra):
    return {
        "provisioner": "maas",
        "maas_url": maas.url,
        "maas_api_key": "file:maas.key",
        "maas_tags": ["gpu", "h100"],
        "maas_poll_interval_s": 0.01,
        "maas_commission_timeout_s": 30,
        "maas_deploy_timeout_s": 30,
        **extra,
    }


def target(name: str, mac: str, bmc: FakeBmc, password: str = "env:MAAS_TEST_BMC_PW") -> ProvisionTarget:
    return ProvisionTarget(
        key=f"SN-{name}",
        name=name,
        serial=f"SN-{name}",
        macs=(mac,),
        provisioning_mac=mac,
        ip=None,
        bmc_address=bmc.url,
        hostvars={
            "bmc_username": "root",
            "bmc_password": password,
            "ssh_authorized_keys": [SSH_KEY],
            "ntp_servers": ["ntp1.example", "10.0.0.1"],
        },
        profile="h100-sxm-8x400g",
    )


def run(backend: MaasBackend, targets):
    lines: list[tuple[str, str]] = []
    outcomes = list(backend.provision(targets, lambda key, line: lines.append((key, line))))
    assert sorted(o.key for o in outcomes) == sorted(t.key for t in targets)
    return {o.key: o for o in outcomes}, lines


def assert_secret_free(secrets: list[str], *texts: str) -> None:
    for secret in secrets:
        for text in texts:
            assert secret not in text


# -- the double on its own: auth, shapes, status machine ------------------------------------------


def test_double_answers_a_wrong_key_with_maas_401(maas):
    consumer, token, _ = maas.api_key.split(":")
    for key, words in (
        ("nope:nope:nope", "Authorization Error: Invalid API key."),
        (f"{consumer}:{token}:wrong-secret", "Invalid signature"),
    ):
        client = MaasClient(maas.url, ApiKey.parse(key))
        with pytest.raises(MaasError) as err:
            client.whoami()
        assert err.value.status == 401 and words in str(err.value)
    assert requests.get(maas.url + "/api/2.0/machines/", timeout=5).status_code == 401


def test_double_enforces_status_machine_with_409(maas):
    client = MaasClient(maas.url, ApiKey.parse(maas.api_key))
    made = client.create_machine(
        [("architecture", "amd64/generic"), ("mac_addresses", MACS[0]), ("commission", "0")]
    )
    assert made["status"] == 0 and made["status_name"] == "New"
    assert made["interface_set"][0]["mac_address"] == MACS[0]
    with pytest.raises(MaasError) as err:
        client.deploy(made["system_id"], "jammy", "#cloud-config\n")
    assert err.value.status == 409 and "Can't deploy a machine that is in the 'New' state" in str(err.value)
    with pytest.raises(MaasError) as err:
        client.allocate(made["system_id"])
    assert err.value.status == 409 and f"No machine with system ID {made['system_id']} available." in str(
        err.value
    )
    maas.machines[made["system_id"]].status = DEPLOYED
    with pytest.raises(MaasError) as err:
        client.commission(made["system_id"])
    assert err.value.status == 409 and "Invalid transition: Deployed -> Commissioning." in str(err.value)


def test_double_reads_op_from_query_and_parameters_from_form_only(maas):
    client = MaasClient(maas.url, ApiKey.parse(maas.api_key))
    url = client.base + "machines/"
    auth = {"Authorization": oauth_header(ApiKey.parse(maas.api_key))}
    answer = requests.post(
        url, json={"architecture": "amd64/generic", "mac_addresses": [MACS[0]]}, headers=auth, timeout=5
    )
    assert answer.status_code == 400
    assert answer.json()["mac_addresses"] == ["This field is required."]
    assert not maas.machines


def test_double_rejects_a_mac_in_use_with_maas_json(maas):
    maas.add_device("mgmt-switch-3", [MACS[0]])
    client = MaasClient(maas.url, ApiKey.parse(maas.api_key))
    answer = requests.post(
        client.base + "machines/",
        data={"architecture": "amd64/generic", "mac_addresses": MACS[0]},
        headers={"Authorization": oauth_header(ApiKey.parse(maas.api_key))},
        timeout=5,
    )
    assert answer.status_code == 400
    assert answer.json() == {"mac_addresses": [f"MAC address {MACS[0]} already in use on mgmt-switch-3."]}


# -- the backend ----------------------------------------------------------------------------------


def test_full_flow_commissions_deploys_and_tags_through_redfish(maas, bmcs, inv, caplog):
    caplog.set_level(logging.DEBUG)
    maas.polls_per_step = 3
    backend = MaasBackend(rack_vars(maas), inv)
    targets = [target("gpu001", MACS[0], bmcs[0]), target("gpu002", MACS[1], bmcs[1])]
    assert backend.preflight(targets) == []
    outcomes, lines = run(backend, targets)
    backend.close()

    for t, bmc in zip(targets, bmcs, strict=True):
        out = outcomes[t.key]
        assert out.ok, out.reason
        machine = maas.machine_by_mac(t.provisioning_mac)
        assert machine.status == DEPLOYED and machine.hostname == t.name
        assert out.details["system_id"] == machine.system_id and out.details["lifecycle"] == "provisioned"
        assert out.details["actions"] == ["create", "commission", "allocate", "deploy"]
        assert out.ip == machine.ip_addresses[0] and out.hostname == t.name
        assert out.report["macs"] == [t.provisioning_mac]
        assert out.report["serial"] == bmc.resources[SYSTEM]["SerialNumber"]  # what commissioning read
        assert machine.tags == {"gpu", "h100"} and sorted(out.details["tags"]) == ["gpu", "h100"]
        # Redfish power parameters as given, the password resolved from its reference.
        assert machine.power_type == "redfish"
        assert machine.power == {"power_address": bmc.url, "power_user": "root", "power_pass": BMC_PASSWORD}
        # Deploy: the distro and the node's own cloud-init user data.
        assert machine.distro_series == "jammy"
        assert machine.user_data.startswith("#cloud-config\n")
        user_data = yaml.safe_load(machine.user_data)
        assert user_data["hostname"] == t.name and user_data["ssh_authorized_keys"] == [SSH_KEY]
        assert user_data["ntp"]["servers"] == ["ntp1.example", "10.0.0.1"]
        # MAAS powered it through the BMC: one-time PXE, on, off after commissioning, on again.
        assert bmc.resources[SYSTEM]["Boot"]["BootSourceOverrideTarget"] == "Pxe"
        resets = [c.body["ResetType"] for c in bmc.calls("POST", "ComputerSystem.Reset")]
        assert resets == ["On", "ForceOff", "On"]
        assert bmc.resources[SYSTEM]["PowerState"] == "On"
        assert {k for k, _ in lines if t.name in k or k == t.key} == {t.key}

    # How the backend spoke: op in the query string, parameters form-encoded.
    writes = [r for r in maas.requests if r.method in ("POST", "PUT")]
    assert writes and all(r.content_type == "application/x-www-form-urlencoded" for r in writes)
    assert all("op" not in r.form for r in writes)
    assert {r.query["op"][0] for r in maas.ops()} >= {"commission", "allocate", "deploy", "update_nodes"}
    deploy = maas.ops("deploy")[0]
    assert base64.b64decode(deploy.form["user_data"][0]).decode().startswith("#cloud-config")
    assert set(maas.tags) == {"gpu", "h100"}

    secret_key = maas.api_key.split(":")[2]
    dumped = json.dumps([asdict(o) for o in outcomes.values()], default=str)
    assert_secret_free([BMC_PASSWORD, secret_key, maas.api_key], dumped, repr(lines), caplog.text)


def test_rerun_adopts_deployed_machines_and_changes_nothing(maas, bmcs, inv):
    backend = MaasBackend(rack_vars(maas), inv)
    targets = [target("gpu001", MACS[0], bmcs[0])]
    first, _ = run(backend, targets)
    assert first["SN-gpu001"].ok
    writes_before = len([r for r in maas.requests if r.method != "GET"])
    resets_before = len(bmcs[0].calls("POST", "ComputerSystem.Reset"))
    second, _ = run(backend, targets)
    out = second["SN-gpu001"]
    assert out.ok and out.details["adopted"] and out.details["actions"] == []
    assert len(maas.machines) == 1
    assert len([r for r in maas.requests if r.method != "GET"]) == writes_before
    assert len(bmcs[0].calls("POST", "ComputerSystem.Reset")) == resets_before


def test_failed_commissioning_carries_maas_message_and_spares_the_rest(maas, bmcs, inv):
    maas.polls_per_step = 2
    maas.fail_commissioning[MACS[1]] = "Commissioning failed: 60-maas-01-nvme-smart exited 1"
    backend = MaasBackend(rack_vars(maas), inv)
    outcomes, _ = run(backend, [target("gpu001", MACS[0], bmcs[0]), target("gpu002", MACS[1], bmcs[1])])
    assert outcomes["SN-gpu001"].ok
    bad = outcomes["SN-gpu002"]
    assert not bad.ok
    assert bad.reason == "MAAS: Failed commissioning: Commissioning failed: 60-maas-01-nvme-smart exited 1"
    assert bad.details["maas_status"] == FAILED_COMMISSIONING and bad.details["lifecycle"] == "failed"
    assert not maas.ops("deploy") or all(
        r.path.rstrip("/").endswith(maas.machine_by_mac(MACS[0]).system_id) for r in maas.ops("deploy")
    )


def test_redfish_refusal_fails_commissioning_with_the_reason(maas, bmcs, inv, monkeypatch):
    monkeypatch.setenv("WRONG_BMC_PW", "definitely-wrong-pw")
    backend = MaasBackend(rack_vars(maas), inv)
    outcomes, _ = run(backend, [target("gpu001", MACS[0], bmcs[0], password="env:WRONG_BMC_PW")])
    out = outcomes["SN-gpu001"]
    assert not out.ok
    assert out.reason.startswith("MAAS: Failed commissioning: Failed to power on node")
    assert "401" in out.reason
    assert bmcs[0].resources[SYSTEM]["PowerState"] == "Off"  # nothing was powered
    assert not bmcs[0].calls("POST", "ComputerSystem.Reset")
    assert "definitely-wrong-pw" not in json.dumps(asdict(out), default=str)


def test_duplicate_mac_fails_the_node_with_maas_message(maas, bmcs, inv):
    maas.add_device("mgmt-switch-3", [MACS[0]])
    backend = MaasBackend(rack_vars(maas), inv)
    outcomes, _ = run(backend, [target("gpu001", MACS[0], bmcs[0]), target("gpu002", MACS[1], bmcs[1])])
    out = outcomes["SN-gpu001"]
    assert not out.ok
    assert out.reason == (
        f"MAAS refused to add the machine (400): mac_addresses: MAC address {MACS[0]} already in use on mgmt-switch-3."
    )
    assert maas.machine_by_mac(MACS[0]) is None
    assert outcomes["SN-gpu002"].ok


def test_wrong_api_key_stops_preflight_and_fails_nodes(maas, bmcs, inv):
    wrong = "Wr0ngConsumer:Wr0ngToken:Wr0ngSecretValue"
    write_secret_file(inv / "maas.key", wrong)
    backend = MaasBackend(rack_vars(maas), inv)
    targets = [target("gpu001", MACS[0], bmcs[0])]
    problems = backend.preflight(targets)
    assert problems == [f"MAAS at {maas.url}: Authorization Error: Invalid API key."]
    outcomes, lines = run(backend, targets)
    out = outcomes["SN-gpu001"]
    assert not out.ok and "(401)" in out.reason and "Invalid API key" in out.reason
    assert not maas.machines and not bmcs[0].calls("POST")
    assert_secret_free(
        ["Wr0ngSecretValue", "Wr0ngToken", wrong], "\n".join(problems), out.reason, repr(lines)
    )


def test_non_admin_key_is_a_preflight_problem(maas, bmcs, inv):
    write_secret_file(inv / "maas.key", maas.add_user("operator"))
    backend = MaasBackend(rack_vars(maas), inv)
    problems = backend.preflight([target("gpu001", MACS[0], bmcs[0])])
    assert len(problems) == 1 and "'operator' is not an administrator" in problems[0]


def test_409_conflict_becomes_the_node_failure(maas, bmcs, inv):
    def someone_else_takes_it(machine):
        machine.status, machine.owner = 10, "bob"

    maas.before_op["allocate"] = someone_else_takes_it
    backend = MaasBackend(rack_vars(maas), inv)
    outcomes, _ = run(backend, [target("gpu001", MACS[0], bmcs[0])])
    out = outcomes["SN-gpu001"]
    sid = maas.machine_by_mac(MACS[0]).system_id
    assert not out.ok
    assert out.reason == f"MAAS refused allocate (409): No machine with system ID {sid} available."
    assert not maas.ops("deploy")


def test_adopts_a_ready_machine_by_mac(maas, bmcs, inv):
    existing = maas.add_machine("old-name", [MACS[0].upper()], status=READY, power_type="manual")
    backend = MaasBackend(rack_vars(maas), inv)
    outcomes, lines = run(backend, [target("gpu001", MACS[0], bmcs[0])])
    out = outcomes["SN-gpu001"]
    assert out.ok, out.reason
    assert list(maas.machines) == [existing.system_id]
    assert out.details["adopted"] and out.details["actions"] == ["update", "allocate", "deploy"]
    assert existing.hostname == "gpu001" and existing.power_type == "redfish"
    assert existing.power["power_address"] == bmcs[0].url
    assert not maas.ops("commission")
    assert any(f"adopting MAAS machine {existing.system_id} (Ready)" in line for _, line in lines)


def test_a_machine_of_another_user_is_not_taken(maas, bmcs, inv):
    maas.add_machine("gpu001", [MACS[0]], status=DEPLOYED, owner="bob", power_type="redfish")
    backend = MaasBackend(rack_vars(maas), inv)
    out = run(backend, [target("gpu001", MACS[0], bmcs[0])])[0]["SN-gpu001"]
    assert not out.ok and "for MAAS user 'bob'" in out.reason
    assert not [r for r in maas.requests if r.method != "GET"]


def test_a_step_that_never_finishes_times_out(maas, bmcs, inv):
    maas.polls_per_step = 10**9
    backend = MaasBackend(rack_vars(maas, maas_commission_timeout_s=0.2), inv)
    out = run(backend, [target("gpu001", MACS[0], bmcs[0])])[0]["SN-gpu001"]
    sid = maas.machine_by_mac(MACS[0]).system_id
    assert not out.ok
    assert out.reason.startswith(
        f"MAAS commissioning did not finish within 0.2 s: machine {sid} still Commissioning"
    )
    assert out.details["lifecycle"] == "provisioning"


def test_plan_lists_every_node_and_touches_nothing(maas, bmcs, inv):
    maas.add_machine("gpu002", [MACS[1]], status=READY)
    backend = MaasBackend(rack_vars(maas), inv)
    lines = backend.plan([target("gpu001", MACS[0], bmcs[0]), target("gpu002", MACS[1], bmcs[1])])
    assert len(lines) == 2
    assert (
        lines[0].startswith("gpu001: create MAAS machine")
        and "commission, allocate, deploy jammy" in lines[0]
    )
    assert lines[1].startswith("gpu002: adopt MAAS machine") and "(Ready): allocate, deploy jammy" in lines[1]
    assert all(r.method == "GET" for r in maas.requests)
    assert not bmcs[0].calls("POST") and not bmcs[1].calls("POST")


def test_user_data_template_is_rendered_per_node(maas, bmcs, inv):
    (inv / "ud.j2").write_text("#cloud-config\nhostname: {{ hostname }}\nfqdn: {{ hostname }}.gpu.example\n")
    backend = MaasBackend(rack_vars(maas, maas_user_data="ud.j2", maas_tags=[]), inv)
    out = run(backend, [target("gpu007", MACS[0], bmcs[0])])[0]["SN-gpu007"]
    assert out.ok, out.reason
    assert yaml.safe_load(maas.machine_by_mac(MACS[0]).user_data) == {
        "hostname": "gpu007",
        "fqdn": "gpu007.gpu.example",
    }


def test_rack_vars_fill_what_host_vars_lack(maas, bmcs, inv):
    (inv / "ops.pub").write_text(SSH_KEY + "\n\n")
    vars_ = rack_vars(maas, ssh_authorized_keys=["ops.pub"], ntp_servers="10.9.9.9", bmc_username="root")
    bare = target("gpu001", MACS[0], bmcs[0])
    bare = ProvisionTarget(**{**asdict(bare), "hostvars": {"bmc_password": "env:MAAS_TEST_BMC_PW"}})
    out = run(MaasBackend(vars_, inv), [bare])[0]["SN-gpu001"]
    assert out.ok, out.reason
    user_data = yaml.safe_load(maas.machine_by_mac(MACS[0]).user_data)
    assert user_data["ssh_authorized_keys"] == [SSH_KEY] and user_data["ntp"]["servers"] == ["10.9.9.9"]


def test_a_failed_deployment_found_is_released_and_deployed_again(maas, bmcs, inv):
    existing = maas.add_machine(
        "gpu001",
        [MACS[0]],
        status=FAILED_DEPLOYMENT,
        owner="admin",
        power_type="redfish",
        power={"power_address": bmcs[0].url, "power_user": "root", "power_pass": BMC_PASSWORD},
    )
    out = run(MaasBackend(rack_vars(maas), inv), [target("gpu001", MACS[0], bmcs[0])])[0]["SN-gpu001"]
    assert out.ok, out.reason
    assert out.details["actions"] == ["release", "allocate", "deploy"]
    assert existing.status == DEPLOYED and existing.owner == "admin"


def test_an_op_whose_answer_is_lost_is_not_sent_twice(maas, bmcs, inv):
    maas.lose_answer.add("deploy")
    backend = MaasBackend(rack_vars(maas), inv)
    out, lines = run(backend, [target("gpu001", MACS[0], bmcs[0])])
    assert out["SN-gpu001"].ok, out["SN-gpu001"].reason
    assert len(maas.ops("deploy")) == 1  # the status showed Deploying: no second deploy
    assert any("did not answer deploy" in line for _, line in lines)


def test_a_lost_answer_that_landed_counts_as_sent_when_the_op_then_fails(maas, bmcs, inv):
    # commission reached MAAS (the machine moved on) and then failed: that is the node's
    # failure, not a reason to commission a second time
    maas.lose_answer.add("commission")
    maas.fail_commissioning[MACS[0]] = "Commissioning failed: 60-maas-01-nvme-smart exited 1"
    out, _ = run(MaasBackend(rack_vars(maas), inv), [target("gpu001", MACS[0], bmcs[0])])
    assert not out["SN-gpu001"].ok and "nvme-smart" in out["SN-gpu001"].reason
    assert len(maas.ops("commission")) == 1
