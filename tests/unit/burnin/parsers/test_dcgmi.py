"""dcgmi diag parser on the real captures, NVIDIA's examples, and 4.x JSON written to the schema."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from bringup.profiles.model import DCGM_TESTS
from burnin.parsers import ParseError
from burnin.parsers.dcgmi import DCGM_ERRORS, LEVEL_TESTS, normalize_status, parse_diag, stated_level
from tests.unit.burnin.parsers._samples import SAMPLES_DIR


def test_text3_gpu_memory_fail_cuda_init(sample):
    d = parse_diag(sample("dcgmi_diag_r3_8xh100_dcgm338_gpu_memory_fail_cuda_init.txt"))
    assert d.format == "text3"
    assert (d.dcgm_version, d.driver_version) == ("3.3.8", "560.35.03")
    assert d.gpu_device_ids == ("2330",) * 8
    assert d.problems == () and d.runtime_error is None
    assert [t.name for t in d.tests] == [
        "Denylist",
        "NVML Library",
        "CUDA Main Library",
        "Permissions and OS Blocks",
        "Persistence Mode",
        "Environment Variables",
        "Page Retirement/Row Remap",
        "Graphics Processes",
        "Inforom",
        "PCIe",
        "GPU Memory",
        "Memory Bandwidth",
        "EUD Test",
    ]
    mem = d.test("GPU Memory")
    assert (mem.category, mem.status) == ("Hardware", "fail")
    assert [(r.gpu_id, r.status) for r in mem.results] == [(None, "fail")]
    assert [w.gpu_id for w in mem.warnings] == list(range(8))
    # wrapped 45-character slices are rejoined exactly, spaces and all
    assert mem.warnings[3].message == (
        "GPU 3 Error using CUDA API cuInit Check DCGM and system logs for errors. Reset GPU. "
        "Restart DCGM. Rerun diagnostics. Unable to initialize CUDA library: 'system not yet "
        "initialized'. . Please check if a CUDA sample program can be run successfully on this host. "
        "Refer to https://github.com/nvidia/cuda-samples"
    )
    persistence = d.test("Persistence Mode")
    assert persistence.status == "pass"
    assert persistence.info[0].startswith(
        'Persistence mode for GPU 0 is disabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " '
        "as root.,Persistence mode for GPU 1 is disabled."
    )
    assert d.test("PCIe").status == "skip" and d.test("PCIe").category == "Integration"
    assert d.test("EUD Test").status == "skip"


def test_text3_persistence_mode_fail(sample):
    d = parse_diag(sample("dcgmi_diag_r4_dcgm3_persistence_mode_fail.txt"))
    assert d.format == "text3" and d.dcgm_version is None
    t = d.test("Persistence Mode")
    assert (t.category, t.status) == ("Deployment", "fail")
    assert t.warnings[0].gpu_id == 0
    assert t.warnings[0].message == (
        "Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode "
        'to be enabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.'
    )
    assert d.test("Memtest").status == "pass"
    skipped = [t.name for t in d.tests if t.status == "skip"]
    assert skipped == [
        "PCIe",
        "GPU Memory",
        "Pulse Test",
        "Targeted Stress",
        "Targeted Power",
        "Memory Bandwidth",
    ]


def test_text4_per_gpu_rows(sample):
    d = parse_diag(sample("dcgmi_diag_r3_dcgm4_format_pass_doc_example.txt"))
    assert d.format == "text4"
    assert (d.dcgm_version, d.driver_version) == ("4.0.0", "550.90.07")
    assert d.gpu_device_ids == ("25b6",) * 4
    assert [t.name for t in d.tests] == [
        "software",
        "memory",
        "diagnostic",
        "pcie",
        "memory_bandwidth",
        "targeted_stress",
        "targeted_power",
    ]
    for t in d.tests:
        assert t.status == "pass"
        assert [(r.gpu_id, r.status) for r in t.results] == [(i, "pass") for i in range(4)]
    assert d.test("pcie").category == "Integration"


def test_text2_partial_pcie_fail_nvlink_down(sample):
    d = parse_diag(sample("dcgmi_diag_r2_pcie_fail_nvlink_down_partial.txt"))
    t = d.test("PCIe")
    assert t.status == "fail" and t.category == "Integration"
    assert len(t.warnings) == 1 and t.warnings[0].gpu_id == 0
    assert "GPU 0's NvLink link 0 is currently down" in t.warnings[0].message
    assert "NvLink link 4 is currently down" in t.warnings[0].message
    assert d.problems == ("result table not closed by its border line (output truncated?)",)


def test_text3_mixed_gpu_lists_and_text4_warnings():
    """Mixed per-GPU statuses (3.x 'Pass - GPUs: 0, 1' rows) and a 4.x failure with a warning.
    Written from DCGM's Diag.cpp stencil; no capture of these forms exists in the samples."""
    text = (
        "Successfully ran diagnostic for group.\n"
        "+---------------------------+------------------------------------------------+\n"
        "| Diagnostic                | Result                                         |\n"
        "+===========================+================================================+\n"
        "+-----  Hardware  ----------+------------------------------------------------+\n"
        "| GPU Memory                | Pass - GPUs: 0, 1, 2                           |\n"
        "|                           | Fail - GPU: 3                                  |\n"
        "| Warning                   | GPU 3 Error using CUDA API cuInit              |\n"
        "+-----  Stress  ------------+------------------------------------------------+\n"
        "| targeted_power            | Fail                                           |\n"
        "|                           | GPU0: Pass                                     |\n"
        "|                           | GPU1: Fail                                     |\n"
        "| Warning                   | Max power of 410.2 did not reach desired power |\n"
        "+---------------------------+------------------------------------------------+\n"
    )
    d = parse_diag(text)
    mem = d.test("GPU Memory")
    assert mem.status == "fail"
    assert [(r.gpu_id, r.status) for r in mem.results] == [(0, "pass"), (1, "pass"), (2, "pass"), (3, "fail")]
    assert [len(r.warnings) for r in mem.results] == [0, 0, 0, 1]
    tp = d.test("targeted_power")
    assert tp.status == "fail"
    assert [(r.gpu_id, r.status) for r in tp.results] == [(0, "pass"), (1, "fail")]
    assert tp.warnings[0].gpu_id == 1  # no GPU in the text: the GPU row above it
    assert d.format == "text4" and d.problems == ()


def test_json3_nvidia_example(sample):
    d = parse_diag(sample("dcgmi_diag_json_dcgm3_per_gpu_nvidia_example.json"))
    assert d.format == "json3" and d.dcgm_version == "1.7"
    deny = d.test("Denylist")
    assert [(r.gpu_id, r.status) for r in deny.results] == [(i, "pass") for i in range(4)]
    mem = d.test("memory")
    assert [(r.gpu_id, r.status) for r in mem.results] == [(0, "skip"), (1, "pass"), (2, "pass"), (3, "pass")]
    w = mem.results[0].warnings[0]
    assert (w.error_id, w.category, w.severity, w.gpu_id) == (55, 11, 2, 0)
    assert w.severity_name == "ISOLATE"
    assert mem.results[1].info == ("Allocated 16583361795 bytes (97.2%)",)
    sm = d.test("sm_stress")
    assert sm.status == "fail"
    assert [r.gpu_id for r in sm.results if r.status == "fail"] == [0, 2, 3]
    assert {w.error_id for w in sm.warnings} == {50}
    assert d.test("Fabric Manager").status == "pass"


def test_json3_partial_is_a_parse_error(sample):
    with pytest.raises(ParseError, match="not valid JSON"):
        parse_diag(sample("dcgmi_diag_r3_j_dcgm3_all_skip_PARTIAL.json"))


def test_json3_gpu_id_key_and_title_case_status():
    text = json.dumps(
        {
            "DCGM GPU Diagnostic": {
                "test_categories": [
                    {
                        "category": "Hardware",
                        "tests": [{"name": "GPU Memory", "results": [{"gpu_id": "0", "status": "Skip"}]}],
                    }
                ],
                "version": "3.1.7",
            }
        }
    )
    d = parse_diag(text)
    assert d.test("GPU Memory").results[0].gpu_id == 0
    assert d.test("GPU Memory").status == "skip"


def _json4_doc() -> dict:
    """A DCGM 4.x 'dcgmi diag -j' document written to dcgm_diag_schema.json (no real 4.x capture
    exists in the samples): required keys only plus a failing memory test with a row remap."""
    return {
        "DCGM Diagnostic": {
            "test_categories": [
                {
                    "category": "Deployment",
                    "tests": [
                        {
                            "name": "software",
                            "results": [
                                {
                                    "entity_group": "GPU",
                                    "entity_group_id": 1,
                                    "entity_id": 0,
                                    "status": "Pass",
                                },
                                {
                                    "entity_group": "GPU",
                                    "entity_group_id": 1,
                                    "entity_id": 1,
                                    "status": "Pass",
                                },
                            ],
                            "test_summary": {"status": "Pass"},
                        }
                    ],
                },
                {
                    "category": "Hardware",
                    "tests": [
                        {
                            "name": "memory",
                            "results": [
                                {
                                    "entity_group": "GPU",
                                    "entity_group_id": 1,
                                    "entity_id": 0,
                                    "status": "Pass",
                                },
                                {
                                    "entity_group": "GPU",
                                    "entity_group_id": 1,
                                    "entity_id": 1,
                                    "status": "Fail",
                                    "warnings": [
                                        {
                                            "warning": "GPU 1 has a pending row remap.",
                                            "error_id": 85,
                                            "error_category": 1,
                                            "error_severity": 6,
                                        }
                                    ],
                                },
                            ],
                            "test_summary": {"status": "Fail"},
                        }
                    ],
                },
            ]
        },
        "entity_groups": [
            {
                "entity_group": "GPU",
                "entity_group_id": 1,
                "entities": [{"entity_id": 0, "device_id": "2330"}, {"entity_id": 1, "device_id": "2330"}],
            }
        ],
        "metadata": {"version": "4.2.3", "Driver Version Detected": "570.124.06"},
    }


def test_json4_schema_shaped_document():
    d = parse_diag(json.dumps(_json4_doc(), indent=2))
    assert d.format == "json4"
    assert (d.dcgm_version, d.driver_version) == ("4.2.3", "570.124.06")
    assert d.gpu_device_ids == ("2330", "2330")
    mem = d.test("memory")
    assert mem.status == "fail" and mem.category == "Hardware"
    assert [(r.gpu_id, r.entity_group, r.status) for r in mem.results] == [
        (0, "GPU", "pass"),
        (1, "GPU", "fail"),
    ]
    w = mem.warnings[0]
    assert (w.gpu_id, w.error_id, w.severity_name) == (1, 85, "RESET")
    assert w.code is not None and w.code.name == "PENDING_ROW_REMAP"
    assert d.test("software").status == "pass"


def test_runtime_errors_json_and_text():
    d = parse_diag(
        json.dumps({"DCGM Diagnostic": {"runtime_error": "Error: the host engine is not running."}})
    )
    assert d.runtime_error == "Error: the host engine is not running." and d.tests == ()
    d = parse_diag(
        "Error: Unable to complete diagnostic for group 2. Return: (-21) Host engine connection invalid/disconnected.\n"
    )
    assert d.runtime_error.startswith("Error: Unable to complete diagnostic") and d.tests == ()


@pytest.mark.parametrize("text", ["", "Successfully ran diagnostic for group.\n", '{"foo": 1}', "[1, 2]"])
def test_not_dcgmi_output(text):
    with pytest.raises(ParseError):
        parse_diag(text)


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("PASS", "pass"),
        ("Pass - All", "pass"),
        ("Skip", "skip"),
        ("SKIP", "skip"),
        ("Fail - GPU: 3", "fail"),
        ("Warn", "warn"),
        ("Not Run", "not_run"),
        ("NOT_RUN", "not_run"),
        ("bogus", "unknown"),
        (None, "unknown"),
    ],
)
def test_normalize_status(raw, status):
    assert normalize_status(raw) == status


def test_error_table_matches_shared_copy():
    shipped = (
        resources.files("burnin.parsers").joinpath("data/dcgm_error_codes_severity_table.tsv").read_text()
    )
    assert shipped == (SAMPLES_DIR / "dcgm_error_codes_severity_table.tsv").read_text()
    assert DCGM_ERRORS[85] == ("PENDING_ROW_REMAP", "RESET", "HARDWARE_MEMORY")
    assert DCGM_ERRORS[80] == ("ROW_REMAP_FAILURE", "RESET", "HARDWARE_MEMORY")
    assert DCGM_ERRORS[120].severity == "ISOLATE"
    assert DCGM_ERRORS[29].severity == "CONFIG"
    assert DCGM_ERRORS[108].name == "CUDA_FM_NOT_INITIALIZED"
    assert len(DCGM_ERRORS) == 133


@pytest.mark.parametrize(
    ("name", "stated", "shown"),
    [
        ("dcgmi_diag_r3_8xh100_dcgm338_gpu_memory_fail_cuda_init.txt", 3, 3),
        ("dcgmi_diag_r4_dcgm3_persistence_mode_fail.txt", 4, 4),
        ("dcgmi_diag_r3_dcgm4_format_pass_doc_example.txt", None, 3),
        ("dcgmi_diag_r2_pcie_fail_nvlink_down_partial.txt", None, 2),
        ("dcgmi_diag_json_dcgm3_per_gpu_nvidia_example.json", None, 3),
        ("dcgmi_diag_r3_j_dcgm331_all_skipped_past_level1_DERIVED.json", None, 3),
        ("dcgmi_diag_4xl40s_dcgm423_cut_after_software_PARTIAL.txt", None, 1),
    ],
)
def test_the_level_an_output_states_and_the_level_its_tests_show(name, stated, shown):
    """A '# SOURCE:' line quoting 'dcgmi diag -r N' is no command line; a prompt before one is."""
    d = parse_diag((SAMPLES_DIR / name).read_text())
    assert (d.level, d.shown_level()) == (stated, shown)


@pytest.mark.parametrize(
    ("line", "level"),
    [
        ("sh-5.1# /usr/bin/dcgmi diag --run 3 --fail-early", 3),
        ("$ dcgmi diag --gpuList 0 -r 4", 4),
        ("root@node1:~# sudo dcgmi diag -r long -j", 3),
        ("dcgmi diag -r xlong", 4),
        ("dcgmi diag -r memtest", None),  # a test, not a level
        ("# SOURCE: 'dcgmi diag -r 2 -j' on 8 GPUs", None),
        ("the output of dcgmi diag -r 3 follows", None),
    ],
)
def test_stated_level(line, level):
    assert stated_level(line + "\n") == level


def test_level_tests_are_the_profiles_test_names():
    """The profile's diag.dcgm_not_applicable names exactly the tests a level may require."""
    assert set(LEVEL_TESTS[4]) == set(DCGM_TESTS)
    assert all(set(LEVEL_TESTS[n]) < set(LEVEL_TESTS[n + 1]) for n in (1, 2, 3))
