"""Hardware profiles: the typed model, its problems by file and field, --set, the shipped schema."""

from __future__ import annotations

import json
import re
import shutil

import jsonschema
import pytest
import yaml

from bringup.core.errors import BadInput, UserError
from bringup.profiles.load import (
    SCHEMA_FILE,
    Profile,
    ProfileError,
    apply_overrides,
    find_profile,
    json_schema,
    load_profile,
    validate_profile,
)
from tests.paths import REPO
from tests.profiles import REQUIRED, minimal, shipped

PROFILES = REPO / "inventories" / "profiles"


def test_shipped_profiles_are_valid():
    profiles = sorted((REPO / "inventories" / "profiles").glob("*.yml"))
    assert profiles
    for path in profiles:
        profile, problems = load_profile(path.stem, path.parent)
        assert problems == [] and profile is not None


def test_every_figure_in_shipped_profiles_says_where_it_comes_from():
    """docs/design.md, idea 5: each threshold carries its provenance as a comment on its line."""
    for path in (REPO / "inventories" / "profiles").glob("*.yml"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            body = line.split("#", 1)[0]
            if re.search(r":\s*\S", body) and not body.strip().startswith(("-", "name:", "description:")):
                assert "#" in line, f"{path.name}:{n} has a figure without a source comment: {line.strip()}"


def test_profile_validation_reports_every_problem():
    problems = validate_profile({"name": "x", "gpu": {"count": True}, "boot_mode": "bios"}, "p.yml")
    fields = {p.field for p in problems}
    assert {"gpu.count", "gpu.model", "boot_mode", "ib.rate_gbps", "pins.driver"} <= fields
    assert all(p.file == "p.yml" for p in problems)


def test_typed_access_with_defaults_from_the_model():
    profile = minimal()
    assert profile.ib.hca_count == 8 and profile.gpu.nvswitch is True
    assert profile.diag.stress_minutes == 10 and profile.diag.pcie_load_seconds == 20
    assert profile.diag.nccl_soak_minutes == 60 and profile.diag.nccl_iteration_timeout_s == 600
    assert profile.diag.nccl_tests == ("all_reduce_perf",) and profile.diag.ib_rounds == 2
    assert (profile.host.disk_use_warn_pct, profile.host.disk_use_fail_pct) == (85, 95)
    assert profile.host.max_clock_offset_s == 2 and profile.host.zfs is False
    assert profile.floors.matmul_tflops_fraction_of_best == 0.9 and profile.floors.matmul_tflops is None
    assert profile.pins.vbios is None and profile.pcie.nvme.gen is None
    assert profile.name == "x" and profile.path is not None and profile.path.name == "x.yml"


def test_a_null_value_means_unset():
    profile = minimal({"pins": {"vbios": None}, "diag": {"stress_minutes": None}})
    assert profile.pins.vbios is None and profile.diag.stress_minutes == 10
    problems = validate_profile({**REQUIRED, "name": "x", "gpu": {**REQUIRED["gpu"], "count": None}}, "p.yml")
    assert [(p.field, p.message) for p in problems] == [("gpu.count", "missing")]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"gpu": {"count": "eight"}}, "gpu.count", "must be int, got str 'eight'"),
        ({"gpu": {"count": 8.0}}, "gpu.count", "must be int, got float 8.0"),
        ({"gpu": {"nvswitch": "yes"}}, "gpu.nvswitch", "must be bool, got str 'yes'"),
        ({"ib": {"rate_gbps": -1}}, "ib.rate_gbps", "must be positive, got -1"),
        ({"ib": {"rate_gbps": "400"}}, "ib.rate_gbps", "must be int or float, got str '400'"),
        ({"ib": {"link_layer": "RoCE"}}, "ib.link_layer", "must be one of InfiniBand, Ethernet, got 'RoCE'"),
        ({"ib": {"hca_count": -1}}, "ib.hca_count", "must not be negative, got -1"),
        ({"ib": {"ca_types": "MT4131"}}, "ib.ca_types", "must be list, got str"),
        ({"ib": {"ca_types": ["CA type: MT4131"]}}, "ib.ca_types", "is not a CA type"),
        ({"pins": {"cuda": 12.2}}, "pins.cuda", "must be str, got float 12.2"),
        ({"floors": {"ib_write_bw_fraction": 97}}, "floors.ib_write_bw_fraction", "is a fraction"),
        ({"diag": {"dcgm_level": 5}}, "diag.dcgm_level", "must be from 1 to 4, got 5"),
        ({"diag": {"nccl_tests": "all_reduce_perf"}}, "diag.nccl_tests", "must be list, got str"),
        ({"diag": {"nccl_tests": []}}, "diag.nccl_tests", "must not be empty"),
        ({"host": {"disk_use_fail_pct": 150}}, "host.disk_use_fail_pct", "must be at most 100"),
        (
            {"host": {"kernel_log_allowlist": ["ok", 3]}},
            "host.kernel_log_allowlist[1]",
            "must be str, got int 3",
        ),
        (
            {"host": {"kernel_log_allowlist": ["(unclosed"]}},
            "host.kernel_log_allowlist",
            "not a regular expression",
        ),
        ({"pcie": {"gpu": 5}}, "pcie.gpu", "must be a mapping, got int 5"),
        (
            {"diag": {"stres_minutes": 1}},
            "diag.stres_minutes",
            "unknown key (did you mean diag.stress_minutes?)",
        ),
        ({"gpus": {"count": 8}}, "gpus", "unknown key (did you mean gpu?)"),
    ],
)
def test_each_problem_names_its_field(change, field, message):
    data = {"name": "x", **REQUIRED}
    for section, values in change.items():
        data[section] = {**data[section], **values} if isinstance(data.get(section), dict) else values
    problems = validate_profile(data, "p.yml")
    assert [p.field for p in problems] == [field], problems
    assert message in problems[0].message and problems[0].file == "p.yml"


def test_name_must_match_the_file(tmp_path):
    shutil.copy(PROFILES / "h100-sxm-8x400g.yml", tmp_path / "other.yml")
    profile, problems = load_profile("other", tmp_path)
    assert profile is None
    assert [(p.field, p.message) for p in problems] == [
        ("name", "is 'h100-sxm-8x400g' but the file is named 'other'")
    ]


def test_overrides_are_yaml_values_validated_again():
    base = shipped()
    profile = apply_overrides(base, ["diag.stress_minutes=0.5", "host.kernel_log_allowlist=['foo: bar']"])
    assert profile.diag.stress_minutes == 0.5 and profile.host.kernel_log_allowlist == ("foo: bar",)
    assert profile.path == base.path and profile.name == base.name
    assert base.diag.stress_minutes == 10  # the original is untouched
    assert apply_overrides(base, ()) is base


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("diag.stress_minutes", "expected KEY=VALUE"),
        ("=3", "expected KEY=VALUE"),
        ("diag.stres_minutes=1", "--set diag.stres_minutes: unknown key (did you mean diag.stress_minutes?)"),
        ("gpu.count=eight", "--set gpu.count: must be int, got str 'eight'"),
        ("gpu.count.x=1", "--set gpu.count.x: gpu.count is a value, not a section"),
        ("ib.rate_gbps=[1", "--set ib.rate_gbps: the value '[1' is not YAML"),
    ],
)
def test_a_bad_override_names_the_key(item, message):
    with pytest.raises(BadInput) as err:
        apply_overrides(shipped(), [item])
    assert message in str(err.value)


def test_overrides_keep_what_the_profile_states_apart_from_defaults():
    """configure passes host.max_clock_offset_s on only when the profile states it."""
    profile = apply_overrides(minimal(), ["diag.stress_minutes=1"])
    assert "max_clock_offset_s" not in profile.host.model_fields_set
    assert "max_clock_offset_s" in shipped("diag.stress_minutes=1").host.model_fields_set


def test_find_profile_by_name_or_path(tmp_path):
    assert find_profile("h100-sxm-8x400g", PROFILES).name == "h100-sxm-8x400g"
    by_path = find_profile(str(PROFILES / "h100-sxm-8x400g.yml"), tmp_path)
    assert by_path.path == PROFILES / "h100-sxm-8x400g.yml"
    with pytest.raises(ProfileError, match="unknown profile 'b300'") as err:
        find_profile("b300", PROFILES)
    assert isinstance(err.value, UserError)


def test_profiles_are_immutable():
    profile = shipped()
    with pytest.raises(ValueError):
        profile.diag.stress_minutes = 1  # type: ignore[misc]


def test_shipped_json_schema_is_the_models():
    assert SCHEMA_FILE.read_text() == json_schema(), (
        f"{SCHEMA_FILE} is stale: run `python -m bringup.profiles.load --schema > bringup/schemas/profile.schema.json`"
    )
    assert json.loads(json_schema()) == Profile.model_json_schema()


def test_shipped_profiles_pass_the_json_schema_and_typos_do_not():
    schema = json.loads(SCHEMA_FILE.read_text())
    for path in PROFILES.glob("*.yml"):
        data = yaml.safe_load(path.read_text())
        jsonschema.validate(data, schema)
        data["diag"]["stres_minutes"] = 1
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, schema)


def test_every_field_says_what_it_is():
    def walk(node):
        if isinstance(node, dict):
            for name, prop in node.get("properties", {}).items():
                if "$ref" not in prop:
                    assert prop.get("description"), f"{name} has no description"
            for value in node.values():
                walk(value)

    walk(Profile.model_json_schema())


def test_the_lab_demo_settings_are_valid_overrides():
    """Unknown keys are refused: the durations the lab demo sets must all exist."""
    from bringup.lab.demo import LAB_SETTINGS

    profile = apply_overrides(shipped(), LAB_SETTINGS)
    assert profile.diag.ib_load_seconds == 3 and profile.floors.nccl_busbw_multi_node_gbps == 0.04
