"""The inventory `bringup configure` hands to Ansible: built from a rack inventory (read by
load_rack, like the real command), the fleet store's addresses and the hardware profile."""

from __future__ import annotations

import pytest

from bringup.configure.inventory import build_inventory, group_name, host_vars, profile_vars
from bringup.inventory.rack import load_rack
from tests.inventories import write_rack
from tests.profiles import minimal


@pytest.fixture
def rack(tmp_path):
    hosts = {
        "gpu001": {"bmc_address": "10.0.0.11", "rack_unit": 1, "ansible_host": "10.1.0.11"},
        "gpu002": {"bmc_address": "10.0.0.12", "rack_unit": 2},
    }
    inv = write_rack(
        tmp_path / "inventories",
        "r07",
        hosts,
        ansible_user="root",
        ansible_ssh_private_key_file="{{ inventory_dir }}/keys/id_ed25519",
        ansible_ssh_common_args="-o StrictHostKeyChecking=no",
        base_apt_repositories=[{"name": "site", "uris": "https://mirror.example/x", "suites": "./"}],
        some_api_token="env:TOKEN",
        # A site value for a profile-driven variable: the profile wins.
        nvidia_driver_version="999.1",
    )
    loaded, problems = load_rack("r07", inv)
    assert loaded is not None, problems
    return loaded


def test_profile_vars_of_the_h100_profile(rack):
    v = profile_vars(rack.profiles["h100-sxm-8x400g"])
    assert v["nvidia_driver_version"] == "535.183.01"
    assert v["fabric_manager_enabled"] is True  # gpu.nvswitch
    assert v["fabric_manager_version"] == "535.183.01"
    assert v["doca_ofed_enabled"] is True and v["doca_ofed_version"] == "24.04-0.6.6"
    assert v["dcgm_version"] == "3.3.8"
    assert v["dcgm_exporter_version"] == "3.3.8-3.6.0"
    assert v["container_toolkit_version"] == "1.16.2"
    assert v["burnin_tools_nccl_version"] == "2.18.3"
    assert v["burnin_tools_pciutils_version"] == "3.9.0"
    assert v["storage_enabled"] is False  # host.zfs
    assert v["base_max_clock_offset_s"] == 2


def test_profile_vars_of_an_amd_profile_pin_amds_driver_not_nvidias():
    """On gpu.vendor amd the driver pin is the AMD GPU Driver release (role amdgpu_driver);
    the NVIDIA roles get no version and playbooks/site.yml skips them by gpu_vendor."""
    from bringup.profiles.load import find_profile
    from tests.paths import REPO

    v = profile_vars(find_profile("mi300x-8x400g", REPO / "inventories" / "profiles"))
    assert v["gpu_vendor"] == "amd"
    assert v["amdgpu_driver_version"] == "30.30.3"
    assert v["nvidia_driver_version"] == ""
    assert v["fabric_manager_enabled"] is False
    assert v["doca_ofed_enabled"] is False


def test_profile_without_nvswitch_ofed_or_fm_pin():
    data = {
        "name": "x",
        "gpu": {"nvswitch": False},
        "pins": {"driver": "550.90.07"},
        "host": {"zfs": True},
    }
    v = profile_vars(minimal(data, name="x"))
    assert v["fabric_manager_enabled"] is False
    assert v["fabric_manager_version"] == "550.90.07"  # follows the driver
    assert v["doca_ofed_enabled"] is False
    assert "doca_ofed_version" not in v and "dcgm_version" not in v  # role defaults apply
    assert v["storage_enabled"] is True
    assert "base_max_clock_offset_s" not in v


def test_host_vars_drop_bmc_access_and_secrets_and_keep_ssh_settings(rack):
    h = rack.host("gpu001")
    v = host_vars(h.name, h.vars, rack.path.parent, rack.profiles[h.profile], ip="10.9.9.9")
    assert not [k for k in v if k.startswith("bmc_")]
    assert "some_api_token" not in v and "profile" not in v and "rack_unit" not in v
    assert v["ansible_user"] == "root"
    assert v["ansible_ssh_common_args"] == "-o StrictHostKeyChecking=no"
    assert v["base_apt_repositories"][0]["uris"] == "https://mirror.example/x"
    # The key path is relative to the rack inventory, not to the generated one.
    assert v["ansible_ssh_private_key_file"] == f"{rack.path.parent.resolve()}/keys/id_ed25519"
    assert v["ansible_host"] == "10.9.9.9"  # the fleet store's address wins
    assert v["nvidia_driver_version"] == "535.183.01"  # the profile wins over the inventory


def test_address_falls_back_to_the_inventory_then_the_name(rack):
    profile = rack.profiles["h100-sxm-8x400g"]
    h1, h2 = rack.host("gpu001"), rack.host("gpu002")
    assert host_vars(h1.name, h1.vars, rack.path.parent, profile, None)["ansible_host"] == "10.1.0.11"
    assert host_vars(h2.name, h2.vars, rack.path.parent, profile, None)["ansible_host"] == "gpu002"


def test_build_inventory_groups_the_rack():
    inv = build_inventory("r07", {"b": {"x": 1}, "a": {"x": 2}})
    hosts = inv["all"]["children"]["r07"]["hosts"]
    assert list(hosts) == ["a", "b"]
    assert group_name("rack-7.b") == "rack_7_b"
    assert group_name("7a") == "rack_7a"


def test_an_nvl72_tray_runs_imex_not_the_fabric_manager():
    """On a multi-node NVLink tray the switch trays manage the fabric; each compute tray runs
    the IMEX daemon at the driver's version instead (docs/configure.md)."""
    from bringup.profiles.load import find_profile
    from tests.paths import REPO

    for name in ("gb200-nvl72-tray", "gb300-nvl72-tray"):
        profile = find_profile(name, REPO / "inventories" / "profiles")
        v = profile_vars(profile)
        assert v["fabric_manager_enabled"] is False, name
        assert v["nvidia_imex_enabled"] is True, name
        assert v["nvidia_imex_version"] == profile.pins.driver, name


def test_an_hgx_node_runs_the_fabric_manager_not_imex(rack):
    v = profile_vars(rack.profiles["h100-sxm-8x400g"])
    assert v["fabric_manager_enabled"] is True
    assert v["nvidia_imex_enabled"] is False


def test_the_imex_domain_is_every_tray_of_the_rack_inventory(tmp_path):
    """The node list of every tray holds the whole rack, also the trays a run does not configure
    (`--nodes`, refused by the gate): a partial run must not shrink the NVLink domain."""
    from bringup.configure.inventory import imex_domain

    hosts = {
        "tray02": {"bmc_address": "10.0.0.12", "rack_unit": 2, "ansible_host": "10.1.0.12"},
        "tray01": {"bmc_address": "10.0.0.11", "rack_unit": 1},
        "tray03": {"bmc_address": "10.0.0.13", "rack_unit": 3},
        "login01": {"bmc_address": "10.0.0.14", "rack_unit": 4, "profile": "h100-sxm-8x400g"},
    }
    inv = write_rack(tmp_path / "inventories", "nvl01", hosts, profile="gb200-nvl72-tray")
    loaded, problems = load_rack("nvl01", inv)
    assert loaded is not None, problems
    # The fleet store's address wins, then the inventory's, then the name; a host on a profile
    # without multi-node NVLink is no member.
    domain = imex_domain(loaded, {"tray01": "10.9.0.11", "tray02": None})
    assert domain == ["10.9.0.11", "10.1.0.12", "tray03"]
