"""The lab's apt repository (stand-in packages built with dpkg-deb) and the node-side stand-ins it
ships: the lab's systemctl (unit state in files) and nvidia-ctk. The programs run for real on a
directory tree that stands for a node's root."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from bringup.lab import aptrepo
from bringup.lab.aptrepo import (
    PackageDef,
    build_repo,
    lab_inventory_vars,
    load_catalog,
    packages_index,
    postinst_text,
    release_text,
    upstream_version,
)
from bringup.lab.standins import CATALOG_PATH, known_faults
from tests.paths import REPO

ROLES = REPO / "playbooks" / "roles"
PROFILE = REPO / "inventories" / "profiles" / "h100-sxm-8x400g.yml"


def test_upstream_version():
    assert upstream_version("1:3.9.0-4") == "3.9.0"
    assert upstream_version("535.183.01-0ubuntu1") == "535.183.01"
    assert upstream_version("1:3.3.8") == "3.3.8"
    assert upstream_version("2.18.3-1+cuda12.2") == "2.18.3"


def _role_default(role: str, var: str) -> str:
    return yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())[var]


def _glob(pattern: str, version: str) -> bool:
    import fnmatch

    return fnmatch.fnmatchcase(version, pattern)


def test_repository_holds_every_pinned_version_the_roles_ask_for():
    """The profile's pins, turned into apt version globs the way the roles do, each match a
    package of the lab repository: the lab can install exactly what production would."""
    pins = yaml.safe_load(PROFILE.read_text())["pins"]
    versions: dict[str, list[str]] = {}
    for pkg in load_catalog():
        versions.setdefault(pkg.name, []).append(pkg.version)
    wanted = {
        f"nvidia-driver-{pins['driver'].split('.')[0]}": f"{pins['driver']}-*",
        f"nvidia-fabricmanager-{pins['fabric_manager'].split('.')[0]}": f"{pins['fabric_manager']}-*",
        "doca-ofed": f"{pins['doca_ofed']}*",
        "datacenter-gpu-manager": f"1:{pins['dcgm']}*",
        "datacenter-gpu-manager-exporter": f"{pins['dcgm_exporter']}*",
        "nvidia-container-toolkit": f"{pins['container_toolkit']}-*",
        "libnccl2": f"{pins['nccl']}-*",
        "nccl-tests": f"{pins['nccl_tests']}-*",
        "perftest": f"{pins['perftest']}-*",
        "infiniband-diags": f"{pins['infiniband_diags']}-*",
        "pciutils": f"1:{pins['pciutils']}-*",
        "stress-ng": f"{pins['stress_ng']}-*",
        "fio": f"{pins['fio']}-*",
        "sysbench": f"{pins['sysbench']}-*",
    }
    # The globs above are the roles' own (defaults/main.yml), checked here so they cannot drift.
    assert _role_default("nvidia_driver", "nvidia_driver_package_version") == "{{ nvidia_driver_version }}-*"
    assert _role_default("dcgm", "dcgm_package_version") == "1:{{ dcgm_version }}*"
    assert _role_default("doca_ofed", "doca_ofed_package_version") == "{{ doca_ofed_version }}*"
    for name, pattern in wanted.items():
        assert any(_glob(pattern, v) for v in versions.get(name, [])), (name, pattern, versions.get(name))
    # A second driver release exists, so a changed pin has something to install.
    assert len(versions[f"nvidia-driver-{pins['driver'].split('.')[0]}"]) >= 2
    assert {upstream_version(v) for v in versions["nvidia-driver-535"]} == {
        upstream_version(v) for v in versions["nvidia-fabricmanager-535"]
    }


@pytest.mark.parametrize("profile", ["h200-sxm-8x400g", "b200-sxm-8x400g"])
def test_repository_holds_the_driver_and_fabric_manager_each_hgx_profile_pins(profile):
    """A lab rack of another HGX platform (`bringup lab demo --profile P`) installs P's driver
    branch: the driver and fabric manager packages at its pin, and a second release of the branch."""
    pins = yaml.safe_load((PROFILE.parent / f"{profile}.yml").read_text())["pins"]
    branch = pins["driver"].split(".")[0]
    versions: dict[str, list[str]] = {}
    for pkg in load_catalog():
        versions.setdefault(pkg.name, []).append(pkg.version)
    driver = versions.get(f"nvidia-driver-{branch}", [])
    fabric_manager = versions.get(f"nvidia-fabricmanager-{branch}", [])
    assert any(_glob(f"{pins['driver']}-*", v) for v in driver), (profile, driver)
    assert any(_glob(f"{pins.get('fabric_manager', pins['driver'])}-*", v) for v in fabric_manager)
    assert len(driver) >= 2
    assert {upstream_version(v) for v in driver} == {upstream_version(v) for v in fabric_manager}


def test_repository_holds_imex_at_the_driver_the_gb200_profile_pins():
    """A GB200 lab rack installs IMEX (role nvidia_imex, its glob checked here) at the driver's
    version, a second release of the branch too, with a unit the lab's systemctl can start."""
    pins = yaml.safe_load((PROFILE.parent / "gb200-nvl72-tray.yml").read_text())["pins"]
    branch = pins["driver"].split(".")[0]
    assert (
        _role_default("nvidia_imex", "nvidia_imex_package")
        == "nvidia-imex-{{ nvidia_imex_version.split('.')[0] }}"
    )
    assert _role_default("nvidia_imex", "nvidia_imex_package_version") == "{{ nvidia_imex_version }}-*"
    imex = [pkg for pkg in load_catalog() if pkg.name == f"nvidia-imex-{branch}"]
    assert any(_glob(f"{pins['driver']}-*", pkg.version) for pkg in imex), [p.version for p in imex]
    driver = {upstream_version(p.version) for p in load_catalog() if p.name == f"nvidia-driver-{branch}"}
    assert {upstream_version(pkg.version) for pkg in imex} == driver
    for pkg in imex:
        assert pkg.units["nvidia-imex.service"]["exec"] in pkg.files


def test_repository_holds_the_amd_driver_release_the_amd_profile_pins():
    """amdgpu_driver's glob for the MI300X profile's pins.driver (an AMD GPU Driver release),
    rendered as Ansible would, matches one lab amdgpu-dkms and not the other release."""
    import jinja2

    pin = yaml.safe_load((REPO / "inventories" / "profiles" / "mi300x-8x400g.yml").read_text())["pins"][
        "driver"
    ]
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    field = env.from_string(_role_default("amdgpu_driver", "amdgpu_driver_release_field")).render(
        amdgpu_driver_version=pin
    )
    assert (pin, field.strip()) == ("30.30.3", "30300300")
    pattern = env.from_string(_role_default("amdgpu_driver", "amdgpu_driver_package_version")).render(
        amdgpu_driver_release_field=field.strip()
    )
    versions = [pkg.version for pkg in load_catalog() if pkg.name == "amdgpu-dkms"]
    assert [v for v in versions if _glob(pattern, v)] == ["1:6.16.13.30300300-2278356.24.04"]
    assert len(versions) >= 2  # a changed pin has something to install


def test_fault_driven_postinst_names_a_declared_fault():
    for pkg in load_catalog():
        if pkg.fail_postinst_on:
            assert pkg.fail_postinst_on in known_faults()
    assert "unreachable" in known_faults()


@pytest.mark.parametrize("faults,rc", [([], 0), (["driver-install-fails"], 1), (["gpu-missing"], 0)])
def test_postinst_fails_only_on_a_node_with_the_fault(tmp_path, faults, rc):
    pkg = next(p for p in load_catalog() if p.fail_postinst_on)
    script = postinst_text(pkg)
    assert script is not None
    faults_file = tmp_path / "faults.json"
    faults_file.write_text(json.dumps({"faults": faults}))
    script = script.replace(aptrepo.FAULTS_FILE, str(faults_file))
    proc = subprocess.run(["sh", "-c", script, "postinst", "configure"], capture_output=True, text=True)
    assert proc.returncode == rc
    if rc:
        assert "Bad return status for module build" in proc.stderr
        assert f"/var/lib/dkms/nvidia/{pkg.upstream}/build/make.log" in proc.stderr
    # dpkg runs postinst for other reasons too (abort-upgrade...): only "configure" fails.
    other = subprocess.run(["sh", "-c", script, "postinst", "abort-upgrade"], capture_output=True)
    assert other.returncode == 0


def test_index_and_release_hash_what_they_list():
    deb = b"not really a deb"
    control = "Package: x\nVersion: 1.0-1\nArchitecture: all\nDescription: d\n"
    index = packages_index([(control, "x_1.0-1_all.deb", deb)])
    assert f"SHA256: {hashlib.sha256(deb).hexdigest()}" in index
    assert "Filename: ./x_1.0-1_all.deb" in index and f"Size: {len(deb)}" in index
    release = release_text({"Packages": index.encode()}, datetime(2026, 1, 2, tzinfo=timezone.utc))
    assert f" {hashlib.sha256(index.encode()).hexdigest()} {len(index.encode())} Packages" in release
    assert "Date: Fri, 02 Jan 2026 00:00:00 GMT" in release


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is part of Debian")
def test_build_repo_makes_installable_looking_packages(tmp_path):
    catalog = [p for p in load_catalog() if p.name in ("nvidia-driver-535", "chrony", "pciutils")]
    debs = build_repo(tmp_path / "repo", catalog)
    assert len(debs) == len(catalog) == 4  # two driver releases
    index = (tmp_path / "repo" / "Packages").read_text()
    assert gzip.decompress((tmp_path / "repo" / "Packages.gz").read_bytes()).decode() == index
    assert index.count("Package: nvidia-driver-535\n") == 2
    assert "Version: 1:3.9.0-4" in index and "Filename: ./pciutils_3.9.0-4_all.deb" in index
    driver = tmp_path / "repo" / "nvidia-driver-535_535.216.01-0ubuntu1_all.deb"
    listing = subprocess.run(
        ["dpkg-deb", "-c", str(driver)], capture_output=True, text=True, check=True
    ).stdout
    assert "./lib/systemd/system/nvidia-persistenced.service" in listing
    assert "root/root" in listing
    postinst = subprocess.run(["dpkg-deb", "-I", str(driver), "postinst"], capture_output=True, text=True)
    assert "driver-install-fails" in postinst.stdout
    chrony = tmp_path / "repo" / "chrony_4.3-2+deb12u1_all.deb"
    conffiles = subprocess.run(["dpkg-deb", "-I", str(chrony), "conffiles"], capture_output=True, text=True)
    assert conffiles.stdout.strip() == "/etc/chrony/chrony.conf"


def test_lab_inventory_vars_point_at_the_repository():
    v = lab_inventory_vars("http://10.1.2.1:4000/")
    assert v["base_apt_repositories"] == [
        {"name": "bringup-lab", "uris": "http://10.1.2.1:4000/", "suites": "./", "trusted": True}
    ]
    assert v["bringup_live_kernel"] is False and v["nvidia_driver_reboot"] is False
    assert v["amdgpu_driver_reboot"] is False  # the AMD driver role, as the NVIDIA one


# -- the lab's systemctl ----------------------------------------------------------------------


@pytest.fixture
def node_root(tmp_path):
    """A directory tree standing for a node's root, with the lab's systemctl and one unit."""
    sbin = tmp_path / "usr/local/sbin"
    sbin.mkdir(parents=True)
    shutil.copy2(aptrepo.SYSTEMCTL_SOURCE, sbin / "systemctl")
    units = tmp_path / "lib/systemd/system"
    units.mkdir(parents=True)
    spec = {"exec": "/usr/bin/food", "description": "Food daemon"}
    (units / "food.service").write_text(aptrepo.unit_text(spec))
    (units / "nodaemon.service").write_text(aptrepo.unit_text({"exec": "/usr/bin/missing"}))
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/food").write_text(aptrepo.STUB)
    (tmp_path / "usr/bin/food").chmod(0o755)
    return tmp_path


def systemctl(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(root / "usr/local/sbin/systemctl"), *args], capture_output=True, text=True
    )


def show(root: Path, unit: str) -> dict[str, str]:
    out = systemctl(root, "show", unit).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def test_systemctl_enable_start_show_like_systemd(node_root):
    assert show(node_root, "food")["UnitFileState"] == "disabled"
    assert show(node_root, "food")["ActiveState"] == "inactive"
    assert systemctl(node_root, "is-enabled", "food", "-l").returncode == 1
    enabled = systemctl(node_root, "enable", "food")
    assert enabled.returncode == 0 and "Created symlink" in enabled.stderr
    link = node_root / "etc/systemd/system/multi-user.target.wants/food.service"
    assert link.is_symlink() and str(link.readlink()) == "/lib/systemd/system/food.service"
    assert systemctl(node_root, "is-enabled", "food.service").stdout.strip() == "enabled"
    assert systemctl(node_root, "start", "food").returncode == 0
    state = show(node_root, "food.service")
    assert (state["ActiveState"], state["SubState"], state["LoadState"]) == ("active", "running", "loaded")
    assert systemctl(node_root, "is-active", "food").returncode == 0
    assert systemctl(node_root, "stop", "food").returncode == 0
    assert systemctl(node_root, "is-active", "food").returncode == 3
    assert systemctl(node_root, "disable", "food").returncode == 0 and not link.exists()


def test_systemctl_fails_like_systemd(node_root):
    assert show(node_root, "nothere")["LoadState"] == "not-found"
    missing = systemctl(node_root, "start", "nothere")
    assert missing.returncode == 5 and "Unit nothere.service not found" in missing.stderr
    broken = systemctl(node_root, "start", "nodaemon")
    assert broken.returncode == 1 and "control process exited with error code" in broken.stderr
    assert systemctl(node_root, "frobnicate", "food").returncode == 1
    systemctl(node_root, "mask", "food")
    assert systemctl(node_root, "is-enabled", "food").stdout.strip() == "masked"
    assert systemctl(node_root, "start", "food").returncode == 1


def test_systemctl_hands_recorded_arguments_to_the_recorded_stand_in(node_root):
    lib = node_root / "usr/local/lib/bringup-standins"
    lib.mkdir(parents=True)
    shutil.copy2(CATALOG_PATH, lib / "catalog.json")
    recorded = node_root / "usr/local/bin/systemctl"
    recorded.parent.mkdir(parents=True)
    recorded.write_text('#!/bin/sh\necho recorded "$@"\nexit 3\n')
    recorded.chmod(0o755)
    out = systemctl(node_root, "is-active", "nvidia-fabricmanager")
    assert (out.returncode, out.stdout.strip()) == (3, "recorded is-active nvidia-fabricmanager")
    # Arguments the recordings do not cover stay with the lab's systemctl.
    assert show(node_root, "nvidia-fabricmanager")["LoadState"] == "not-found"


# -- nvidia-ctk ---------------------------------------------------------------------------------


def ctk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(aptrepo.PACKAGES_DIR / "nvidia-ctk"), *args], capture_output=True, text=True
    )


def test_nvidia_ctk_adds_the_runtime_and_keeps_the_rest(tmp_path):
    config = tmp_path / "daemon.json"
    config.write_text(json.dumps({"log-driver": "journald"}))
    dry = ctk("runtime", "configure", "--runtime=docker", f"--config={config}", "--dry-run")
    assert dry.returncode == 0
    wanted = {
        "log-driver": "journald",
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}},
    }
    assert json.loads(dry.stdout) == wanted
    assert json.loads(config.read_text()) == {"log-driver": "journald"}  # dry run wrote nothing
    assert ctk("runtime", "configure", "--runtime=docker", f"--config={config}").returncode == 0
    assert json.loads(config.read_text()) == wanted
    # The same answer again: the playbook's copy task then changes nothing.
    again = ctk("runtime", "configure", "--runtime=docker", f"--config={config}", "--dry-run")
    assert again.stdout == config.read_text()
    assert ctk("runtime", "configure", "--runtime=crio").returncode == 1
    assert ctk("cdi", "generate").returncode == 2


def test_catalog_package_files_exist():
    for pkg in load_catalog():
        assert isinstance(pkg, PackageDef)
        assert re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", pkg.name)
        for spec in {**pkg.files, **pkg.conffiles}.values():
            if "source" in spec:
                assert (aptrepo.PACKAGES_DIR / spec["source"]).is_file()
