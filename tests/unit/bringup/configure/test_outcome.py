"""Folding ansible-runner events into per-host outcomes, on events captured from real runs of
playbooks/site.yml against the virtual rack (tests/fixtures/configure/, see README there):

- events_first_run.json: 4 fresh nodes; node03 carries driver-install-fails (the driver's
  postinst exits 1), node04 is unreachable (eth0 down);
- events_second_run.json: node01 and node02 again, nothing to change;
- events_pin_changed.json: node01 after the profile's driver and fabric manager pins moved
  from 535.183.01 to 535.216.01.
"""

from __future__ import annotations

import copy
import json

import pytest

from bringup.configure.outcome import EventFolder, error_lines, failure_summary, parse_report
from tests.paths import TESTS

FIXTURES = TESTS / "fixtures" / "configure"
ALL_ROLES = [
    "base",
    "burnin_tools",
    "container_toolkit",
    "dcgm",
    "doca_ofed",
    "fabric_manager",
    "nvidia_driver",
]


def events(name: str) -> list[dict]:
    return json.loads((FIXTURES / name).read_text())


def fold(name: str, hosts: list[str]) -> dict:
    folder = EventFolder(hosts)
    for event in events(name):
        folder.feed(event)
    return folder.finish()


@pytest.fixture(scope="module")
def first() -> dict:
    return fold("events_first_run.json", ["node01", "node02", "node03", "node04"])


def test_healthy_nodes_end_ok_with_every_role_applied_and_versions_reported(first):
    for name in ("node01", "node02"):
        o = first[name]
        assert o.status == "ok"
        assert o.changed_roles == ALL_ROLES
        assert o.changed == sum(o.changed_by_role.values()) > 0
        assert o.packages["nvidia-driver-535"] == "535.183.01-0ubuntu1"  # held: dpkg status "hi"
        assert o.packages["nvidia-fabricmanager-535"] == "535.183.01-1"
        assert o.packages["datacenter-gpu-manager"] == "1:3.3.8"
        assert o.packages["libnccl2"] == "2.18.3-1+cuda12.2"
        # The lab may not reboot: the driver install leaves Debian's reboot-required flag.
        assert o.reboot_required
        assert "nvidia_driver: Install the pinned driver" in o.changed_tasks


def test_failed_install_names_role_task_and_dpkg_message(first):
    o = first["node03"]
    assert o.status == "failed"
    assert (o.role, o.task) == ("nvidia_driver", "Install the pinned driver")
    assert "dpkg: error processing package nvidia-driver-535 (--configure)" in o.message
    assert "post-installation script subprocess returned error exit status 1" in o.message
    assert "Bad return status for module build" in o.message  # the postinst's own words
    assert o.details["action"] == "ansible.builtin.apt"
    assert o.details["rc"] == 100  # apt-get's exit status
    assert any("Sub-process /usr/bin/dpkg returned an error code (1)" in line for line in o.details["errors"])
    assert not o.packages  # it never reached the version report
    # Roles before the failure applied: base changed things on it.
    assert "base" in o.changed_roles


def test_unreachable_host_is_recorded_as_such(first):
    o = first["node04"]
    assert o.status == "unreachable"
    assert o.role == "base" and "clock" in o.task  # the play's first task
    assert "port 22" in o.message
    assert o.ok == 0 and o.changed == 0


def test_counts_agree_with_ansibles_own_recap(first):
    stats = next(e for e in events("events_first_run.json") if e["event"] == "playbook_on_stats")
    for name, o in first.items():
        assert o.changed == stats["event_data"]["changed"].get(name, 0), name
        assert o.ok == stats["event_data"]["ok"].get(name, 0), name


def test_second_run_changes_nothing_anywhere():
    outcomes = fold("events_second_run.json", ["node01", "node02"])
    for o in outcomes.values():
        assert o.status == "ok"
        assert o.changed == 0 and o.changed_roles == []
        assert o.packages["nvidia-driver-535"] == "535.183.01-0ubuntu1"


def test_changed_pin_changes_only_the_roles_that_use_it():
    o = fold("events_pin_changed.json", ["node01"])["node01"]
    assert o.status == "ok"
    assert o.changed_roles == ["fabric_manager", "nvidia_driver"]
    assert o.packages["nvidia-driver-535"] == "535.216.01-0ubuntu1"
    assert o.packages["nvidia-fabricmanager-535"] == "535.216.01-1"


def test_host_never_named_by_an_event_did_not_run():
    outcomes = fold("events_second_run.json", ["node01", "node02", "node09"])
    assert outcomes["node09"].status == "not-run"
    assert outcomes["node01"].status == "ok"


def test_stats_alone_settle_hosts_the_task_events_did_not():
    stats = [e for e in events("events_first_run.json") if e["event"] == "playbook_on_stats"]
    folder = EventFolder(["node01", "node03", "node04"])
    for event in stats:
        folder.feed(event)
    outcomes = folder.finish()
    assert outcomes["node03"].status == "failed"
    assert outcomes["node04"].status == "unreachable"
    assert outcomes["node01"].status == "not-run"


def test_ignored_failure_does_not_fail_the_host():
    failed = next(e for e in events("events_first_run.json") if e["event"] == "runner_on_failed")
    ignored = copy.deepcopy(failed)
    ignored["event_data"]["ignore_errors"] = True
    folder = EventFolder(["node03"])
    folder.feed(ignored)
    assert folder.outcomes["node03"].status == "pending"
    folder.feed(failed)
    assert folder.outcomes["node03"].status == "failed"


def test_first_failure_wins():
    failed = next(e for e in events("events_first_run.json") if e["event"] == "runner_on_failed")
    later = copy.deepcopy(failed)
    later["event_data"]["task"] = "Some later task"
    folder = EventFolder(["node03"])
    folder.feed(failed)
    folder.feed(later)
    assert folder.outcomes["node03"].task == "Install the pinned driver"


def test_parse_report_keeps_installed_and_held_packages_only():
    out = (
        "chrony\t4.3-2+deb12u1\tii \n"
        "nvidia-driver-535\t535.183.01-0ubuntu1\thi \n"
        "nvidia-fabricmanager-535\t535.183.01-1\tiF \n"  # half-configured after a failed postinst
        "fio\t3.33-3\tiiR\n"  # reinstall required: not a clean install
        "reboot-required\n"
    )
    packages, reboot = parse_report(out)
    assert packages == {"chrony": "4.3-2+deb12u1", "nvidia-driver-535": "535.183.01-0ubuntu1"}
    assert reboot
    assert parse_report("chrony\t4.3-2+deb12u1\tii \n") == ({"chrony": "4.3-2+deb12u1"}, False)


def test_loop_failure_reports_the_failed_item():
    res = {
        "msg": "One or more items failed",
        "results": [
            {"item": "nvidia-dcgm", "failed": False, "changed": False},
            {"item": "dcgm-exporter", "failed": True, "msg": "Unable to start service dcgm-exporter: boom"},
        ],
    }
    message, details = failure_summary(res)
    assert message == "Unable to start service dcgm-exporter: boom"
    assert details["msg"] == message


def test_error_lines_keep_dpkgs_continuation_line():
    text = "Setting up x (1) ...\ndpkg: error processing package x (--configure):\n installed x package post-installation script subprocess returned error exit status 1\nok\n"
    assert error_lines(text) == [
        "dpkg: error processing package x (--configure):",
        "installed x package post-installation script subprocess returned error exit status 1",
    ]
