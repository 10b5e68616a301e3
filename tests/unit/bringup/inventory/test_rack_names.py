"""Host names and BMC addresses an inventory may hold: each refused at `inventory check` with one
line naming the file, the host and the field, never an internal error (before the fix: bad names
passed, a bad port ended in "internal error: ValueError", exit 70)."""

from __future__ import annotations

import json

import pytest

from bringup.inventory.rack import load_rack
from tests.unit.bringup.core.test_hostnames import BAD_NAMES
from tests.unit.bringup.inventory.test_rack_hostile import HEAD, check, write
from tests.unit.bringup.inventory.test_rack_hostile import invdir as _invdir

invdir = _invdir  # the same fixture, by its name here

NAMES = [n for n in BAD_NAMES if n]  # an empty YAML key is no host


@pytest.mark.parametrize("name", NAMES, ids=range(len(NAMES)))
def test_inventory_check_refuses_a_name_that_is_no_host_name(invdir, name):
    write(
        invdir,
        HEAD
        + "  hosts:\n"
        + f"    {json.dumps(name)}: {{bmc_address: 10.1.0.1, rack_unit: 1}}\n"
        + "    gpu002: {bmc_address: 10.1.0.2, rack_unit: 2}\n",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    (hit,) = [p for p in problems if not p.warning]
    assert hit.file.endswith("r09.yml") and hit.field == "host name" and "RFC 1123" in hit.message
    code, out = check(invdir)
    lines = [x for x in out.splitlines() if "RFC 1123" in x]
    assert code == 1 and len(lines) == 1, out
    assert "r09.yml" in lines[0] and repr(name) in lines[0] and "host name" in lines[0]


def test_one_line_per_bad_host(invdir):
    write(
        invdir,
        HEAD + '  hosts:\n    "a b": {bmc_address: 10.1.0.1, rack_unit: 1}\n'
        '    "c,d": {bmc_address: 10.1.0.2, rack_unit: 2}\n',
    )
    code, out = check(invdir)
    assert code == 1 and sum("RFC 1123" in x for x in out.splitlines()) == 2, out


BAD_ADDRESSES = [
    ("10.1.0.1:99999", "port"),
    ("10.1.0.1:abc", "port"),
    ("https://10.1.0.1:0/", "port"),
    ("10.1.0.1\r\nX-Injected: 1", "control character"),
    ("https://10.1.0.1/\nHost: evil", "control character"),
    ("10.1.0.1\u2028", "control character"),
    ("ftp://10.1.0.1", "https"),
    ("https://user:pw@10.1.0.1", "user"),
    ("10.1.0.1 10.1.0.2", "space"),
    ("fe80::1", "brackets"),
]


@pytest.mark.parametrize(("address", "why"), BAD_ADDRESSES, ids=range(len(BAD_ADDRESSES)))
def test_a_bad_bmc_address_is_one_line_naming_the_field(invdir, address, why):
    write(
        invdir,
        HEAD + f"  hosts:\n    gpu001: {{bmc_address: {json.dumps(address)}, rack_unit: 1}}\n",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    hits = [p for p in problems if not p.warning]
    assert hits and all(p.host == "gpu001" and p.field == "bmc_address" for p in hits), problems
    assert any(why in p.message for p in hits), problems
    code, out = check(invdir)
    assert code == 1 and "bmc_address" in out and "internal error" not in out, out


@pytest.mark.parametrize(
    "address", ["10.1.0.1", "10.1.0.1:8443", "https://bmc01.example:443/", "[fe80::1]:443"]
)
def test_good_bmc_addresses_still_pass(invdir, address):
    write(invdir, HEAD + f"  hosts:\n    gpu001: {{bmc_address: {json.dumps(address)}, rack_unit: 1}}\n")
    rack, problems = load_rack("r09", invdir)
    assert rack is not None, problems


@pytest.mark.parametrize("key", ["ansible_host", "provision_ip"])
@pytest.mark.parametrize("value", ["10.20.0.1 slots=999", "-oProxyCommand=touch /tmp/x", "a,b", "n[1-2]"])
def test_a_node_address_that_is_no_address_is_refused(invdir, key, value):
    """What ssh, Ansible and mpirun are given as the node's address: an option or a second
    hostfile field there would be read as such (ssh takes '-oProxyCommand=...' as an option)."""
    write(
        invdir,
        HEAD + f"  hosts:\n    gpu001: {{bmc_address: 10.1.0.1, rack_unit: 1, {key}: {json.dumps(value)}}}\n",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is None
    (hit,) = [p for p in problems if not p.warning]
    assert hit.host == "gpu001" and hit.field == key and "RFC 1123" in hit.message, problems


@pytest.mark.parametrize(
    "value", ["10.20.0.1", "fe80::1", "gpu001.mgmt.example", "{{ inventory_hostname }}.example"]
)
def test_node_addresses_that_are_addresses_pass(invdir, value):
    write(
        invdir,
        HEAD
        + f"  hosts:\n    gpu001: {{bmc_address: 10.1.0.1, rack_unit: 1, ansible_host: {json.dumps(value)}}}\n",
    )
    rack, problems = load_rack("r09", invdir)
    assert rack is not None, problems
