"""The storage role's drive choice (filter bringup_pool_disks), on device facts shaped like
Ansible's `ansible_devices` / `ansible_mounts` (keys as `ansible -m setup` reports them)."""

from __future__ import annotations

import importlib.util

from tests.paths import REPO

PLUGIN = REPO / "playbooks" / "roles" / "storage" / "filter_plugins" / "pool_disks.py"
_spec = importlib.util.spec_from_file_location("pool_disks", PLUGIN)
assert _spec and _spec.loader
pool_disks_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pool_disks_module)
pool_disks = pool_disks_module.pool_disks

OS_MODEL = "SAMSUNG MZ1L21T9HCLS-00A07"  # M.2 boot drive
DATA_MODEL = "SAMSUNG MZQL27T6HBLA-00A07"  # U.2 PM9A3 data drives


def drive(model, serial, partitions=None, holders=None, ids=None):
    return {
        "holders": holders or [],
        "host": "Non-Volatile memory controller: Samsung Electronics Co Ltd NVMe SSD Controller PM9A1/PM9A3",
        "links": {
            "ids": ids
            if ids is not None
            else [f"nvme-{model.replace(' ', '_')}_{serial}", f"nvme-eui.{serial.lower()}"],
            "labels": [],
            "masters": [],
            "uuids": [],
        },
        "model": model,
        "partitions": partitions or {},
        "removable": "0",
        "rotational": "0",
        "serial": serial,
        "size": "6.99 TB",
        "virtual": 1,
    }


def facts():
    devices = {
        "nvme0n1": drive(OS_MODEL, "S6A0NE0T100001", partitions={"nvme0n1p1": {}, "nvme0n1p2": {}}),
        "nvme1n1": drive(DATA_MODEL, "S6CLNE0T200001"),
        "nvme2n1": drive(DATA_MODEL, "S6CLNE0T200002"),
        "nvme3n1": drive(DATA_MODEL, "S6CLNE0T200003"),
        "nvme4n1": drive(DATA_MODEL, "S6CLNE0T200004"),
        "loop0": {"holders": [], "links": {"ids": []}, "model": None, "partitions": {}, "serial": None},
    }
    mounts = [
        {"mount": "/", "device": "/dev/nvme0n1p2", "fstype": "ext4"},
        {"mount": "/boot/efi", "device": "/dev/nvme0n1p1"},
    ]
    return devices, mounts


def test_all_data_drives_and_never_the_os_drive():
    devices, mounts = facts()
    chosen = pool_disks(devices, mounts, r"^nvme[0-9]+n[0-9]+$", [".*"])
    assert chosen == [
        f"/dev/disk/by-id/nvme-{DATA_MODEL.replace(' ', '_')}_S6CLNE0T20000{i}" for i in (1, 2, 3, 4)
    ]


def test_model_rule_and_excluded_serials():
    devices, mounts = facts()
    devices["nvme5n1"] = drive("INTEL SSDPF2KX076TZ", "PHAX000000001")
    chosen = pool_disks(devices, mounts, r"^nvme[0-9]+n[0-9]+$", ["SAMSUNG MZQL2.*"], ["S6CLNE0T200003"])
    assert [c.rsplit("_", 1)[1] for c in chosen] == ["S6CLNE0T200001", "S6CLNE0T200002", "S6CLNE0T200004"]


def test_drives_in_use_are_skipped_even_if_the_rule_matches():
    devices, mounts = facts()
    devices["nvme1n1"]["holders"] = ["md0"]  # member of a software RAID
    devices["nvme2n1"]["partitions"] = {"nvme2n1p1": {}}
    mounts.append({"mount": "/data", "device": "/dev/nvme3n1"})  # a filesystem on the whole drive
    chosen = pool_disks(devices, mounts, r"^nvme[0-9]+n[0-9]+$", [".*"])
    assert [c.rsplit("_", 1)[1] for c in chosen] == ["S6CLNE0T200004"]


def test_drive_without_by_id_links_is_named_by_kernel_name():
    devices, mounts = facts()
    devices = {"nvme1n1": drive(DATA_MODEL, "X1", ids=[])}
    assert pool_disks(devices, mounts, r"^nvme[0-9]+n[0-9]+$", [".*"]) == ["/dev/nvme1n1"]
    devices = {"nvme1n1": drive(DATA_MODEL, "X1", ids=["nvme-eui.0025388b11b2c3d4"])}
    assert pool_disks(devices, mounts, r"^nvme[0-9]+n[0-9]+$", [".*"]) == [
        "/dev/disk/by-id/nvme-eui.0025388b11b2c3d4"
    ]


def test_filter_is_registered_under_its_playbook_name():
    assert pool_disks_module.FilterModule().filters()["bringup_pool_disks"] is pool_disks
