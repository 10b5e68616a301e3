"""The MAAS backend against the MAAS test double, which powers machines through the virtual
rack's real Redfish emulator (sushy-tools) the way MAAS's redfish driver does."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict
from pathlib import Path

import pytest
import requests

from bringup.core.credentials import write_secret_file
from bringup.provision.backend import ProvisionTarget
from bringup.provision.maas import MaasBackend
from tests.doubles.maas import DEPLOYED, FAILED_COMMISSIONING, MaasDouble

pytestmark = pytest.mark.lab

# sushy's fake driver lands a power change 1-11 s after it is asked for.
POWER_WAIT_S = 25


def system_url(node, auth) -> str:
    members = requests.get(f"{node.bmc_address}/redfish/v1/Systems", auth=auth, timeout=10).json()["Members"]
    return node.bmc_address + members[0]["@odata.id"]


def system(node, auth) -> dict:
    return requests.get(system_url(node, auth), auth=auth, timeout=10).json()


def wait_power(node, auth, want: str) -> str:
    deadline = time.monotonic() + POWER_WAIT_S
    state = system(node, auth)["PowerState"]
    while state != want and time.monotonic() < deadline:
        time.sleep(0.5)
        state = system(node, auth)["PowerState"]
    return state


def target(node, state, password_ref: str) -> ProvisionTarget:
    return ProvisionTarget(
        key=node.serial,
        name=node.name,
        serial=node.serial,
        macs=(node.mac,),
        provisioning_mac=node.mac,
        ip=node.ip,
        bmc_address=node.bmc_address,
        hostvars={"bmc_username": "root", "bmc_password": password_ref, "ntp_servers": [state.gateway]},
        profile="h100-sxm-8x400g",
        uuid=node.uuid,
    )


def test_maas_powers_lab_machines_through_the_redfish_emulator(lab, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    _, state = lab
    password_file = Path(state.state_dir) / "bmc-password"
    password = password_file.read_text().strip()
    auth = ("root", password)
    good = next(n for n in state.nodes if n.name == "node04")
    refused = next(n for n in state.nodes if n.name == "node01")

    if system(good, auth)["PowerState"] != "Off":  # start from a machine that is off
        requests.post(
            system_url(good, auth) + "/Actions/ComputerSystem.Reset",
            json={"ResetType": "ForceOff"},
            auth=auth,
            timeout=10,
        )
        assert wait_power(good, auth, "Off") == "Off"
    refused_before = system(refused, auth)

    monkeypatch.setenv("LAB_WRONG_BMC_PW", "not-the-lab-password")
    with MaasDouble(polls_per_step=2) as maas:
        write_secret_file(tmp_path / "maas.key", maas.api_key)
        rack_vars = {
            "provisioner": "maas",
            "maas_url": maas.url,
            "maas_api_key": "file:maas.key",
            "maas_tags": ["lab"],
            "maas_poll_interval_s": 0.2,
            "maas_commission_timeout_s": 60,
            "maas_deploy_timeout_s": 60,
        }
        backend = MaasBackend(rack_vars, tmp_path)
        targets = [
            target(good, state, f"file:{password_file}"),
            target(refused, state, "env:LAB_WRONG_BMC_PW"),
        ]
        assert backend.preflight(targets) == []
        lines: list[tuple[str, str]] = []
        outcomes = {o.key: o for o in backend.provision(targets, lambda k, line: lines.append((k, line)))}
        backend.close()

        ok, bad = outcomes[good.serial], outcomes[refused.serial]
        assert ok.ok, ok.reason
        assert maas.machine_by_mac(good.mac).status == DEPLOYED
        assert ok.report["serial"] == good.serial and ok.report["uuid"] == good.uuid  # read from the BMC
        assert not bad.ok and bad.details["maas_status"] == FAILED_COMMISSIONING
        assert (
            bad.reason.startswith("MAAS: Failed commissioning: Failed to power on node")
            and "401" in bad.reason
        )
        failed_calls = [c for c in maas.redfish_calls if c[0] == maas.machine_by_mac(refused.mac).system_id]
        assert [c[1] for c in failed_calls] == ["GET"] and failed_calls[0][3] == 401

    # The emulator really was driven: one-time PXE set and the machine powered on.
    after = system(good, auth)
    assert after["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    assert wait_power(good, auth, "On") == "On"
    # The machine whose BMC refused MAAS's credentials was not touched.
    refused_after = system(refused, auth)
    assert refused_after["PowerState"] == refused_before["PowerState"]
    assert refused_after["Boot"] == refused_before["Boot"]

    dumped = json.dumps([asdict(o) for o in outcomes.values()], default=str) + repr(lines) + caplog.text
    assert password not in dumped and "not-the-lab-password" not in dumped

    requests.post(  # leave the shared lab's node as it was (off), without waiting for it
        system_url(good, auth) + "/Actions/ComputerSystem.Reset",
        json={"ResetType": "ForceOff"},
        auth=auth,
        timeout=10,
    )
