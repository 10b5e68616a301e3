"""Host names as RFC 1123 section 2.1 allows them, and addresses an export may name."""

from __future__ import annotations

import pytest

from bringup.core.hostnames import address_problem, hostname_problem

BAD_NAMES = [
    "n03 slots=999",  # a space: a second hostfile field
    "a,b",  # a comma: two names in a Slurm hostlist
    "gpu[1-2]",  # brackets: a Slurm range
    "-n01",  # a leading '-': an option to ssh, scontrol, mpirun
    '=HYPERLINK("http://x")',  # a leading '=': a spreadsheet formula
    "n01-",  # a label ends with '-'
    "gpu_01",  # '_' is no host name character
    "n01\nNodeName=evil",  # a newline: a second line
    "a..b",  # an empty label
    "",
    "x" * 64,  # a label over 63 characters
    ".".join(["a" * 63] * 4),  # 255 characters
    "gpü01",
]
GOOD_NAMES = ["gpu001", "n1", "123", "r01-gpu-001", "gpu001.r01.example.com", "A" * 63]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_names_are_refused_with_a_reason(name):
    why = hostname_problem(name)
    assert why and "RFC 1123" in why


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_good_names_pass(name):
    assert hostname_problem(name) is None


def test_an_address_may_be_an_ip_of_either_family_or_a_host_name():
    for good in ("10.0.0.1", "fe80::1", "gpu001"):
        assert address_problem(good) is None
    for bad in ("n03 slots=999", "10.0.0.1 slots=9", "-x", ""):
        assert address_problem(bad)
