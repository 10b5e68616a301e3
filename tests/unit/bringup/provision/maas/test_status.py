"""MAAS machine statuses: the lifecycle state each means, and the next step from each (pure)."""

from __future__ import annotations

from bringup.fleet.lifecycle import State
from bringup.provision.maas import MaasStatus, lifecycle_state, next_step


def test_maas_statuses_map_onto_the_lifecycle():
    assert lifecycle_state(MaasStatus.DEPLOYED) is State.PROVISIONED
    for failed in (MaasStatus.FAILED_COMMISSIONING, MaasStatus.FAILED_DEPLOYMENT, MaasStatus.FAILED_TESTING):
        assert lifecycle_state(failed) is State.FAILED
    for busy in (MaasStatus.NEW, MaasStatus.COMMISSIONING, MaasStatus.READY, MaasStatus.ALLOCATED, 9):
        assert lifecycle_state(busy) is State.PROVISIONING


def test_next_step_retries_a_found_failure_once_but_not_its_own():
    assert next_step(MaasStatus.FAILED_COMMISSIONING, frozenset()) == "commission"
    assert next_step(MaasStatus.FAILED_COMMISSIONING, frozenset({"commission"})) == "fail"
    assert next_step(MaasStatus.FAILED_DEPLOYMENT, frozenset()) == "release"
    assert next_step(MaasStatus.FAILED_DEPLOYMENT, frozenset({"deploy"})) == "fail"
    assert next_step(MaasStatus.READY, frozenset({"commission"})) == "allocate"
    assert next_step(MaasStatus.BROKEN, frozenset()) == "fail"
