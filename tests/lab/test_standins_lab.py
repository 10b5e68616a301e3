"""Stand-ins on running lab nodes, over real SSH: the fake PCI tree is what /sys shows, faults
reach it, and burnin-stress speeds the GPU links up only while it runs.

Uses the session `lab` fixture (4 nodes; node02 gpu-hw-slowdown, node03 pcie-nic-downtrained).
"""

from __future__ import annotations

import json
import re

import pytest

from bringup.lab.standins import sysfs
from burnin.parsers.ibstat import parse_ibstat
from tests.lab.conftest import node_ssh

pytestmark = pytest.mark.lab

DEVICES = sysfs.hgx_h100_devices()
GPUS = [d.bdf for d in DEVICES if d.kind == "gpu"]
NIC4 = next(d.bdf for d in DEVICES if d.kind == "nic" and d.rail == 4)


ssh = node_ssh


# Runs inside the node with its python3: what a plain-Python sysfs collector sees.
COLLECT = r"""
import json, os, re
base = "/sys/bus/pci/devices"
out = {}
for bdf in sorted(os.listdir(base)):
    path = os.path.join(base, bdf)
    real = os.path.realpath(path)
    files = {f: open(os.path.join(path, f)).read().strip()
             for f in ("vendor", "device", "class", "current_link_speed", "current_link_width")}
    kernel = {d: sorted(os.listdir(os.path.join(path, d)))
              for d in ("infiniband", "net", "nvme") if os.path.isdir(os.path.join(path, d))}
    chain = [p for p in real.split("/") if re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d", p)]
    out[bdf] = {"real": real, "chain": chain, "files": files, "kernel": kernel}
slots = {s: open(f"/sys/bus/pci/slots/{s}/address").read().strip() for s in os.listdir("/sys/bus/pci/slots")}
print(json.dumps({"devices": out, "slots": slots}))
"""


def test_sysfs_shows_the_fake_pci_tree(lab):
    _, state = lab
    rc, listing, _ = ssh(state, "node01", "ls /sys/bus/pci/devices")
    assert rc == 0 and listing.split() == sorted(d.bdf for d in DEVICES)
    rc, out, err = ssh(state, "node01", f"python3 -c '{COLLECT}'")
    assert rc == 0, err
    seen = json.loads(out)
    assert sorted(seen["devices"]) == sorted(d.bdf for d in DEVICES)
    gpu = seen["devices"][GPUS[0]]
    assert gpu["real"].startswith("/sys/devices/pci0000:50/") and gpu["chain"][-1] == GPUS[0]
    assert len(gpu["chain"]) == 4  # root port, switch upstream, switch downstream, the GPU
    assert gpu["files"] == {
        "vendor": "0x10de",
        "device": "0x2330",
        "class": "0x030200",
        "current_link_speed": "2.5 GT/s PCIe",
        "current_link_width": "16",
    }
    assert seen["devices"][NIC4]["kernel"] == {"infiniband": ["mlx5_4"], "net": ["ibp152s0"]}
    assert sorted(seen["slots"].values()) == sorted(d.bdf[:-2] for d in DEVICES if d.slot)


def test_rest_of_sys_still_works(lab):
    """The fake tree hides the host's PCI devices, not the node's network devices or CPUs."""
    _, state = lab
    node = next(n for n in state.nodes if n.name == "node01")
    rc, out, _ = ssh(
        state, "node01", "cat /sys/class/net/eth0/address; ls /sys/devices/system/cpu | grep -c '^cpu[0-9]'"
    )
    assert rc == 0
    mac, cpus = out.split()
    assert mac == node.mac and int(cpus) >= 1
    rc, _, _ = ssh(state, "node01", "echo 9000 > /sys/devices/virtual/net/eth0/mtu")
    assert rc != 0  # the real sysfs stays read-only


def test_downtrained_nic_reads_x8_on_node03_only(lab):
    _, state = lab
    cmd = f"cd /sys/bus/pci/devices/{NIC4} && cat current_link_speed current_link_width max_link_width"
    assert ssh(state, "node03", cmd)[1].splitlines() == ["16.0 GT/s PCIe", "8", "16"]
    assert ssh(state, "node01", cmd)[1].splitlines() == ["32.0 GT/s PCIe", "16", "16"]
    _, dmesg, _ = ssh(state, "node03", "dmesg --time-format iso")
    assert f"mlx5_core {NIC4}: 126.024 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x8" in dmesg


def test_stress_raises_gpu_links_while_running_and_restores_them(lab):
    _, state = lab
    speeds = "cat " + " ".join(f"/sys/bus/pci/devices/{b}/current_link_speed" for b in GPUS)
    script = (
        "burnin-stress --seconds 3 --json > /tmp/stress.json & pid=$!; sleep 1; "
        f"echo during; {speeds}; wait $pid; echo rc=$?; echo after; {speeds}; echo json; cat /tmp/stress.json"
    )
    rc, out, err = ssh(state, "node01", script)
    assert rc == 0, err
    head, doc = out.split("json\n", 1)
    lines = head.splitlines()
    during, after = lines[1:9], lines[11:19]
    assert lines[0] == "during" and lines[9] == "rc=0" and lines[10] == "after"
    assert set(during) == {"32.0 GT/s PCIe"}
    assert set(after) == {"2.5 GT/s PCIe"}
    result = json.loads(doc)
    assert result["seconds"] == 3 and len(result["gpus"]) == 8
    assert [g["pci_bus_id"][4:].lower() for g in result["gpus"]] == GPUS


def test_load_only_faults_show_under_load(lab):
    _, state = lab
    query = (
        "nvidia-smi --query-gpu=index,clocks_throttle_reasons.active,temperature.gpu,power.draw "
        "--format=csv,noheader,nounits -lms 1000"
    )
    slow = {
        line.split(", ")[0]
        for line in ssh(state, "node02", query)[1].splitlines()
        if "0x0000000000000088" in line
    }
    assert slow == {"5"}
    assert "0x0000000000000088" not in ssh(state, "node01", query)[1]
    # ... and not in the idle nvidia-smi -q of the same node
    assert ssh(state, "node02", "nvidia-smi -q")[1] == ssh(state, "node01", "nvidia-smi -q")[1]


def test_every_node_has_its_own_ib_guids_and_its_tools_agree_on_them(lab):
    """ibstat and the node's sysfs show the same GUIDs on one node, different ones on two nodes."""
    _, state = lab
    ib = "/sys/bus/pci/devices/*/infiniband/*"
    seen = {}
    for name in ("node01", "node02"):
        rc, out, err = ssh(state, name, "ibstat")
        assert rc == 0, err
        ports = {h.name: h.ports[0].port_guid for h in parse_ibstat(out).hcas}
        assert len(ports) == 8 and len(set(ports.values())) == 8
        rc, out, err = ssh(state, name, f"grep -H . {ib}/node_guid {ib}/sys_image_guid {ib}/ports/1/gids/0")
        assert rc == 0, err
        # grep -H: /sys/bus/pci/devices/<BDF>/infiniband/<hca>/<attr>:<value> (a BDF has ':' too)
        found = (re.fullmatch(r".*/infiniband/([^/]+)/([^:]+):(.*)", line) for line in out.splitlines())
        files = {(m[1], m[2]): m[3] for m in found if m}
        assert len(files) == 3 * 8, out
        for hca, guid in ports.items():
            assert guid.startswith("0xa088c2")  # the recorded HCAs' vendor (OUI) kept
            assert "0x" + files[(hca, "node_guid")].replace(":", "") == guid
            assert files[(hca, "sys_image_guid")] == files[(hca, "node_guid")]
            assert files[(hca, "ports/1/gids/0")] == "fe80:0000:0000:0000:" + files[(hca, "node_guid")]
        seen[name] = set(ports.values())
    assert not seen["node01"] & seen["node02"]
