"""MAAS machine statuses and what they mean to bringup: names, lifecycle state, next step."""

from __future__ import annotations

from enum import IntEnum

from bringup.fleet.lifecycle import State


class MaasStatus(IntEnum):
    """``status`` of a MAAS machine (maasserver.enum.NODE_STATUS)."""

    NEW = 0
    COMMISSIONING = 1
    FAILED_COMMISSIONING = 2
    MISSING = 3
    READY = 4
    RESERVED = 5
    DEPLOYED = 6
    RETIRED = 7
    BROKEN = 8
    DEPLOYING = 9
    ALLOCATED = 10
    FAILED_DEPLOYMENT = 11
    RELEASING = 12
    FAILED_RELEASING = 13
    DISK_ERASING = 14
    FAILED_DISK_ERASING = 15
    RESCUE_MODE = 16
    ENTERING_RESCUE_MODE = 17
    FAILED_ENTERING_RESCUE_MODE = 18
    EXITING_RESCUE_MODE = 19
    FAILED_EXITING_RESCUE_MODE = 20
    TESTING = 21
    FAILED_TESTING = 22


M = MaasStatus
STATUS_NAMES: dict[int, str] = {
    M.NEW: "New",
    M.COMMISSIONING: "Commissioning",
    M.FAILED_COMMISSIONING: "Failed commissioning",
    M.MISSING: "Missing",
    M.READY: "Ready",
    M.RESERVED: "Reserved",
    M.DEPLOYED: "Deployed",
    M.RETIRED: "Retired",
    M.BROKEN: "Broken",
    M.DEPLOYING: "Deploying",
    M.ALLOCATED: "Allocated",
    M.FAILED_DEPLOYMENT: "Failed deployment",
    M.RELEASING: "Releasing",
    M.FAILED_RELEASING: "Releasing failed",
    M.DISK_ERASING: "Disk erasing",
    M.FAILED_DISK_ERASING: "Failed disk erasing",
    M.RESCUE_MODE: "Rescue mode",
    M.ENTERING_RESCUE_MODE: "Entering rescue mode",
    M.FAILED_ENTERING_RESCUE_MODE: "Failed to enter rescue mode",
    M.EXITING_RESCUE_MODE: "Exiting rescue mode",
    M.FAILED_EXITING_RESCUE_MODE: "Failed to exit rescue mode",
    M.TESTING: "Testing",
    M.FAILED_TESTING: "Failed testing",
}
_FAILED = frozenset(
    {
        M.FAILED_COMMISSIONING,
        M.FAILED_DEPLOYMENT,
        M.FAILED_TESTING,
        M.BROKEN,
        M.MISSING,
        M.FAILED_RELEASING,
        M.FAILED_DISK_ERASING,
        M.FAILED_ENTERING_RESCUE_MODE,
        M.FAILED_EXITING_RESCUE_MODE,
    }
)
COMMISSION_PHASE = frozenset({M.NEW, M.COMMISSIONING, M.TESTING})
DEPLOY_PHASE = frozenset({M.READY, M.ALLOCATED, M.DEPLOYING, M.RELEASING})
OWNED = frozenset({M.ALLOCATED, M.DEPLOYING, M.DEPLOYED, M.FAILED_DEPLOYMENT})


def status_name(status: int) -> str:
    return STATUS_NAMES.get(status, f"status {status}")


def lifecycle_state(status: int) -> State:
    """Where a MAAS status puts the node in bringup's lifecycle."""
    if status == M.DEPLOYED:
        return State.PROVISIONED
    if status == M.RETIRED:
        return State.RETIRED
    if status in _FAILED:
        return State.FAILED
    return State.PROVISIONING


def next_step(status: int, done: frozenset[str]) -> str:
    """What to do with a machine in ``status``, given the actions this run already sent.

    One of: commission, allocate, deploy, release, wait, done, fail. A failed status is
    retried once when this run found it so (an adopted machine); after our own action it is
    the node's failure.
    """
    if status == M.DEPLOYED:
        return "done"
    if status in (M.NEW,):
        return "fail" if "commission" in done else "commission"
    if status in (M.FAILED_COMMISSIONING, M.FAILED_TESTING):
        return "fail" if "commission" in done else "commission"
    if status in (M.COMMISSIONING, M.TESTING, M.DEPLOYING, M.RELEASING):
        return "wait"
    if status == M.READY:
        return "fail" if "allocate" in done else "allocate"
    if status == M.ALLOCATED:
        return "fail" if "deploy" in done else "deploy"
    if status == M.FAILED_DEPLOYMENT:
        return "fail" if "release" in done or "deploy" in done else "release"
    return "fail"
