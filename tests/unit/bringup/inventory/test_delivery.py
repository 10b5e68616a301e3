"""The order file (inventories/deliveries/*.yml): the model, every problem at once, one line each."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from bringup.core.errors import UserError
from bringup.inventory.delivery import (
    DeliveryError,
    load_delivery,
    parse_delivery,
    parse_duration,
    read_delivery,
    version_at_least,
)

REPO = Path(__file__).resolve().parents[4]
INVENTORIES = REPO / "inventories"

GOOD = {
    "name": "po123",
    "nodes": {"count": 2, "serials": ["SN1", "SN2"]},
    "profiles": {
        "h100-sxm-8x400g": {
            "cpu": {"model": "Platinum 8480", "sockets": 2, "cores": 112},
            "memory": {"total_gib": 2048, "dimm_count": 32, "dimm_size_gib": 64, "dimm_speed_mts": 4800},
            "gpu": {"model": "H100", "count": 8, "min_vbios": "96.00.74.00.01"},
            "nics": [{"model": "MT4129", "count": 8, "min_firmware": "28.39.1002"}],
            "nvme": {"count": 8, "min_capacity_gb": 3840},
            "psu": {"count": 6, "redundancy": "N+N"},
            "bmc": {"min_version": "7.00.00.00"},
            "bios": {"min_version": "1.6.0", "attributes": {"SriovGlobalEnable": "Enabled", "Turbo": True}},
        }
    },
    "acceptance": {"stages": ["preflight", "gpu"], "soak": "72h", "min_accepted_fraction": 0.9},
}


def _with(path: str, value: object) -> dict:
    data = copy.deepcopy(GOOD)
    node = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[key]
    if value is _DROP:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


_DROP = object()


def _lines(data: dict) -> list[str]:
    delivery, problems = parse_delivery(data, "d.yml")
    assert delivery is None
    return [str(p) for p in problems]


def test_a_good_order_is_typed():
    delivery, problems = parse_delivery(GOOD, "d.yml")
    assert problems == []
    assert delivery is not None
    order = delivery.profile("h100-sxm-8x400g")
    assert order is not None
    assert order.memory.dimm_count == 32
    assert order.nics[0].min_firmware == "28.39.1002"
    assert order.bios.attributes == {"SriovGlobalEnable": "Enabled", "Turbo": True}
    assert delivery.acceptance.soak == 72 * 3600
    assert delivery.acceptance.soak_stages == ("gpu", "ib", "nccl")  # the default
    assert delivery.nodes.serials == ("SN1", "SN2")
    assert delivery.profile("other") is None


def test_sections_left_out_are_not_compared():
    delivery, problems = parse_delivery(
        {"name": "x", "nodes": {"count": 3}, "profiles": {"p": {"gpu": {"count": 8}}}}, "d.yml"
    )
    assert problems == []
    order = delivery.profiles["p"]
    assert order.memory.dimm_count is None and order.psu.count is None and order.nics == ()
    assert delivery.acceptance.soak == 0 and delivery.acceptance.min_accepted_fraction == 1.0


def test_unknown_keys_are_refused_with_a_did_you_mean():
    data = _with("profiles.h100-sxm-8x400g.memory.dim_count", 32)
    assert _lines(data) == [
        "d.yml: field profiles.h100-sxm-8x400g.memory.dim_count: unknown key "
        "(did you mean profiles.h100-sxm-8x400g.memory.dimm_count?)"
    ]
    assert _lines(_with("acceptance.soak_hours", 72)) == [
        "d.yml: field acceptance.soak_hours: unknown key "
        "(expected one of stages, soak, soak_stages, min_accepted_fraction)"
    ]
    nic = _with("profiles.h100-sxm-8x400g.nics", [{"model": "CX7", "min_fw": "1.2"}])
    assert _lines(nic) == [
        "d.yml: field profiles.h100-sxm-8x400g.nics[0].min_fw: unknown key "
        "(did you mean profiles.h100-sxm-8x400g.nics[0].min_firmware?)"
    ]
    top = _with("node", {"count": 1})
    assert _lines(top) == ["d.yml: field node: unknown key (did you mean nodes?)"]


def test_every_problem_is_reported_at_once_each_naming_its_field():
    data = copy.deepcopy(GOOD)
    order = data["profiles"]["h100-sxm-8x400g"]
    order["memory"]["dimm_count"] = "thirty-two"
    order["gpu"]["count"] = True
    order["gpu"]["min_vbios"] = "latest"
    order["psu"]["redundancy"] = "2N"
    data["acceptance"]["soak"] = "three days"
    data["acceptance"]["min_accepted_fraction"] = 95
    del data["nodes"]["count"]
    lines = _lines(data)
    assert len(lines) == 7, lines
    joined = "\n".join(lines)
    for field in (
        "profiles.h100-sxm-8x400g.memory.dimm_count: must be int, got str 'thirty-two'",
        "profiles.h100-sxm-8x400g.gpu.count: must be int, got bool True",
        "profiles.h100-sxm-8x400g.gpu.min_vbios: must be a version with numbers",
        "profiles.h100-sxm-8x400g.psu.redundancy: must be one of N+N, N+1, N, got '2N'",
        "acceptance.soak: is not a duration like 72h",
        "acceptance.min_accepted_fraction: is a fraction",
        "nodes.count: missing",
    ):
        assert f"d.yml: field {field}" in joined


def test_packing_list_problems():
    assert _lines(_with("nodes.serials", ["SN1", "SN1"])) == [
        "d.yml: field nodes.serials: serial 'SN1' is listed 2 times"
    ]
    assert _lines(_with("nodes.serials", ["SN1", "SN2", "SN3"])) == [
        "d.yml: field nodes.serials: the packing list names 3 serial(s) but nodes.count is 2"
    ]
    delivery, problems = parse_delivery(_with("nodes.serials", [1234, 5678]), "d.yml")
    assert problems == [] and delivery.nodes.serials == ("1234", "5678")  # numbers on a list are serials


def test_memory_total_must_agree_with_the_dimms():
    lines = _lines(_with("profiles.h100-sxm-8x400g.memory.total_gib", 1024))
    assert lines == [
        "d.yml: field profiles.h100-sxm-8x400g.memory.total_gib: is 1024 but dimm_count x dimm_size_gib is 2048"
    ]


def test_no_profiles_and_not_a_mapping():
    assert _lines(_with("profiles", {})) == ["d.yml: field profiles: must not be empty"]
    assert parse_delivery(["a"], "d.yml")[1][0].message.startswith("a delivery must be a YAML mapping")
    assert _lines(_with("profiles.h100-sxm-8x400g.memory", 32)) == [
        "d.yml: field profiles.h100-sxm-8x400g.memory: must be a mapping, got int 32"
    ]


def test_bios_attributes_hold_plain_values():
    lines = _lines(_with("profiles.h100-sxm-8x400g.bios.attributes", {"A": [1, 2]}))
    assert lines == [
        "d.yml: field profiles.h100-sxm-8x400g.bios.attributes: attribute 'A' must be a string, number or boolean, got list"
    ]


@pytest.mark.parametrize(
    ("found", "minimum", "ok"),
    [
        ("96.00.74.00.01", "96.00.74.00.01", True),
        ("96.00.61.00.01", "96.00.74.00.01", False),
        ("28.40.1000", "28.39.1002", True),
        ("28.39.1002", "28.40.1000", False),
        ("2.19.1", "2.9", True),
        ("7.10.30.00", "7.00.00.00", True),
        ("iLO 5 v2.72", "5.2.70", True),
        ("1.6", "1.6.0", True),
        ("unknown", "1.0", False),
    ],
)
def test_version_at_least(found, minimum, ok):
    assert version_at_least(found, minimum) is ok


def test_durations():
    assert parse_duration("72h") == 259200
    assert parse_duration("30m") == 1800
    assert parse_duration("1.5d") == 129600
    assert parse_duration(90) == 90
    for bad in ("72", "soon", -1, True):
        with pytest.raises(ValueError):
            parse_duration(bad)


# -- the files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["example", "lab"])
def test_shipped_orders_are_valid(name):
    delivery = load_delivery(name, INVENTORIES)
    assert delivery.name == name
    assert delivery.path == INVENTORIES / "deliveries" / f"{name}.yml"
    assert set(delivery.profiles) <= {p.stem for p in (INVENTORIES / "profiles").glob("*.yml")}


def _tree(tmp_path: Path, text: str, name: str = "d1") -> Path:
    (tmp_path / "deliveries").mkdir()
    shutil.copytree(INVENTORIES / "profiles", tmp_path / "profiles")
    path = tmp_path / "deliveries" / f"{name}.yml"
    path.write_text(text)
    return path


def test_load_names_the_file_and_lists_every_problem(tmp_path):
    data = _with("nodes.serials", ["SN1", "SN1"])
    data["name"] = "d1"
    data["profiles"]["h100-pcie"] = {}
    path = _tree(tmp_path, yaml.safe_dump(data))
    with pytest.raises(DeliveryError) as err:
        load_delivery("d1", tmp_path)
    assert isinstance(err.value, UserError)
    lines = str(err.value).splitlines()
    assert lines == [
        f"{path}: field nodes.serials: serial 'SN1' is listed 2 times",
        f"{path}: field profiles.h100-pcie: no hardware profile 'h100-pcie' (profiles in {tmp_path / 'profiles'}: "
        + ", ".join(sorted(p.stem for p in (tmp_path / "profiles").glob("*.yml")))
        + ")",
    ]
    assert len(err.value.problems) == 2


def test_load_by_path_and_a_name_that_differs_from_the_file(tmp_path):
    path = _tree(tmp_path, yaml.safe_dump(GOOD), name="other")
    delivery, problems = read_delivery(str(path), tmp_path)
    assert delivery is None
    assert [str(p) for p in problems] == [f"{path}: field name: is 'po123' but the file is named 'other'"]


def test_missing_file_lists_the_deliveries_there(tmp_path):
    _tree(tmp_path, yaml.safe_dump(GOOD | {"name": "d1"}))
    with pytest.raises(DeliveryError, match=r"d9\.yml: no such delivery \(deliveries in .*: d1\)"):
        load_delivery("d9", tmp_path)


def test_broken_yaml_is_one_line(tmp_path):
    path = _tree(tmp_path, "name: [unclosed\n")
    with pytest.raises(DeliveryError) as err:
        load_delivery("d1", tmp_path)
    assert str(err.value).startswith(str(path))
    assert len(str(err.value).splitlines()) == 1


def test_the_shipped_json_schema_is_current():
    from bringup.inventory.delivery import SCHEMA_FILE, json_schema

    assert SCHEMA_FILE.read_text() == json_schema(), (
        f"{SCHEMA_FILE} is stale: run `python -m bringup.inventory.delivery --schema > bringup/schemas/delivery.schema.json`"
    )
