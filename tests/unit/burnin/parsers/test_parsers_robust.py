"""Every parser on hostile input: random text, binary-ish text, mangled real samples, odd JSON.

The contract: a parser returns a record or raises ParseError, nothing else, and never an
'internal' ParseError (that is the safety net catching a parser bug).
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnin.parsers import ParseError
from burnin.parsers._common import parser
from burnin.parsers.amd_smi import parse_ecc, parse_static, parse_xgmi
from burnin.parsers.cpu_load import parse_clock_samples, parse_stress_ng_brief, parse_throttle_counts
from burnin.parsers.dcgmi import parse_diag
from burnin.parsers.gpu_burn import parse_gpu_burn
from burnin.parsers.hardware import (
    parse_dmidecode_memory,
    parse_fio_json,
    parse_lscpu,
    parse_nvme_smart_log,
    parse_smartctl_nvme,
)
from burnin.parsers.host import parse_df, parse_ofed_version, parse_zpool_status_x
from burnin.parsers.ibstat import parse_ibstat, parse_ibstatus
from burnin.parsers.kernel_log import parse_kernel_log
from burnin.parsers.lspci import parse_lspci_vv
from burnin.parsers.nvidia_smi import (
    decode_throttle_reasons,
    parse_gpu_list,
    parse_nvlink_status,
    parse_query,
    parse_query_gpu_csv,
    parse_table,
    parse_throttle_samples,
    parse_topology,
)
from burnin.parsers.rocm_smi import parse_product, parse_ras, parse_showtopo
from burnin.parsers.sacct import parse_node_events, parse_sacct
from burnin.parsers.sysbench import parse_sysbench_memory
from burnin.parsers.sysfs import (
    parse_aer_counters,
    parse_ib_sysfs,
    parse_link_speed,
    parse_link_width,
    speed_to_gen,
)
from tests.sample_index import NOT_SAMPLES
from tests.unit.burnin.parsers._samples import SAMPLES_DIR, load

PARSERS = [
    parse_query,
    parse_nvlink_status,
    parse_gpu_list,
    parse_throttle_samples,
    parse_query_gpu_csv,
    parse_topology,
    parse_table,
    parse_diag,
    parse_kernel_log,
    parse_lspci_vv,
    parse_ibstat,
    parse_ibstatus,
    parse_df,
    parse_zpool_status_x,
    parse_ofed_version,
    parse_link_speed,
    parse_link_width,
    parse_aer_counters,
    parse_ib_sysfs,
    parse_gpu_burn,
    parse_dmidecode_memory,
    parse_lscpu,
    parse_smartctl_nvme,
    parse_nvme_smart_log,
    parse_fio_json,
    parse_sysbench_memory,
    parse_throttle_counts,
    parse_clock_samples,
    parse_stress_ng_brief,
    parse_sacct,
    parse_node_events,
    parse_static,
    parse_ecc,
    parse_xgmi,
    parse_product,
    parse_ras,
    parse_showtopo,
]

SAMPLES = [load(p.name) for p in sorted(SAMPLES_DIR.iterdir()) if p.is_file() and p.name not in NOT_SAMPLES]

# Tokens that steer random lines into the parsers' deeper branches.
TOKENS = [
    "GPU 0: ",
    "GPU 00000000:19:00.0",
    "    ",
    "\t",
    " : ",
    ": ",
    "|",
    "+",
    "-----",
    "=====",
    "Pass",
    "Fail - All",
    "GPU0: Pass",
    "Warning",
    "Link 3: ",
    "GB/s",
    "<inactive>",
    "NVRM: Xid (PCI:0000:0f:00): ",
    "79, ",
    "pid=12, ",
    "name=x, ",
    "SXid (PCI:0000:85:00.0): ",
    "Non-fatal",
    "AER: ",
    "PCIe Bus Error: severity=Corrected, type=",
    "[12] ",
    "limited by 16.0 GT/s PCIe x4 link at 0000:00:1c.0",
    "(capable of 8.0 Gb/s with 5 GT/s x2 link)",
    "Gb/s available PCIe bandwidth, ",
    "Port module event[error]: module ",
    "lost carrier",
    "CA 'mlx5_0'",
    "Port 1:",
    "Rate: ",
    "state: ",
    "4: ACTIVE",
    "Infiniband device 'mlx5_0' port 1 status:",
    "LnkSta:",
    "Speed 32GT/s (ok)",
    "Width x16 (downgraded)",
    "19:00.0 3D controller: NVIDIA",
    "proc'd: ",
    "(7150 Gflop/s)",
    "errors: ",
    "(DIED!)",
    "temps: ",
    "Tested 8 GPUs:",
    "GPU 1: FAULTY",
    "pool: ",
    "config:",
    "errors: ",
    "MLNX_OFED_LINUX-",
    "mlx5_0/ports/1/counters/link_downed: ",
    "TOTAL_ERR_COR ",
    "0x88",
    "[N/A]",
    "N/A",
    "{",
    "}",
    "[",
    "]",
    '"',
    ",",
    "\n",
    "\r",
    "0",
    "255",
    "-1",
    "32.0",
    "x",
    "%",
    "NV18",
    "NIC0: mlx5_0",
    "[  123.456] ",
    "kern  :warn  : ",
    "kernel: ",
    "2024-11-15T05:39:15,491363+00:00 ",
    "[Sun Feb 23 16:24:18 2025] ",
    "=== ROCm System Management Interface ===\n",
    "=== Link Type between two GPUs ===\n",
    "=== End of ROCm SMI Log ===\n",
    "       GPU0         GPU1\n",
    "GPU1   XGMI         0\n",
    "PCIE",
    "XXXX",
]

FAST = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def run_all(text: str) -> None:
    for parse in PARSERS:
        try:
            parse(text)
        except ParseError as exc:
            assert not exc.internal, f"{parse.__name__} crashed: {exc}"


@FAST
@given(st.text(max_size=2000))
def test_random_text(text):
    run_all(text)


@FAST
@given(st.binary(max_size=2000), st.sampled_from(["latin-1", "utf-8"]))
def test_binaryish_text(data, encoding):
    run_all(data.decode(encoding, errors="surrogateescape"))


@FAST
@given(st.lists(st.lists(st.sampled_from(TOKENS), max_size=12).map("".join), max_size=40).map("\n".join))
def test_token_soup(text):
    run_all(text)


@FAST
@given(
    st.sampled_from(SAMPLES),
    st.randoms(use_true_random=False),
    st.sampled_from(["cut", "shuffle", "drop", "dup"]),
)
def test_mangled_samples(text, rnd: random.Random, how):
    lines = text.splitlines(keepends=True)[:400]
    if how == "cut":
        joined = "".join(lines)
        mangled = joined[: rnd.randint(0, len(joined))]
    elif how == "shuffle":
        rnd.shuffle(lines)
        mangled = "".join(lines)
    elif how == "drop":
        mangled = "".join(line for line in lines if rnd.random() > 0.3)
    else:
        mangled = "".join(line * rnd.randint(1, 3) for line in lines)
    run_all(mangled)


JSON_KEYS = st.sampled_from(
    [
        "DCGM Diagnostic",
        "DCGM GPU Diagnostic",
        "test_categories",
        "category",
        "tests",
        "name",
        "results",
        "status",
        "gpu_ids",
        "gpu_id",
        "entity_group",
        "entity_id",
        "warnings",
        "warning",
        "error_id",
        "error_severity",
        "info",
        "test_summary",
        "metadata",
        "version",
        "runtime_error",
        "entity_groups",
        "entities",
        "device_id",
    ]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(JSON_KEYS | st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@FAST
@given(st.sampled_from(["DCGM Diagnostic", "DCGM GPU Diagnostic"]), JSON_VALUES, JSON_VALUES)
def test_dcgm_json_of_any_shape(top, body, meta):
    try:
        result = parse_diag(json.dumps({top: body, "metadata": meta, "entity_groups": meta}))
    except ParseError as exc:
        assert not exc.internal, str(exc)
    else:
        assert result.format in ("json3", "json4")


@FAST
@given(st.integers(min_value=0, max_value=2**64))
def test_decode_throttle_reasons_any_mask(mask):
    names = decode_throttle_reasons(mask)
    assert len(names) == bin(mask).count("1")


@FAST
@given(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5))
def test_speed_to_gen_any_value(value):
    assert speed_to_gen(value) in (None, 1, 2, 3, 4, 5, 6, 7)


HUGE = "9" * 5000


@pytest.mark.parametrize(
    "text",
    [
        f"RxErr {HUGE}\n",
        f"GPU {HUGE}: NVIDIA H100 (UUID: GPU-1)\n\t Link {HUGE}: 25 GB/s\n",
        f"[ 1.5] NVRM: Xid (PCI:0000:0f:00): {HUGE}, pid={HUGE}, name=x, y\n",
        f"{HUGE}, 0x88, {HUGE}, 1.0\n",
        f"CA 'mlx5_0'\n\tPort {HUGE}:\n\t\tRate: {HUGE}\n",
        f"100.0%  proc'd: {HUGE} (1 Gflop/s)   errors: {HUGE}   temps: {HUGE} C\nTested {HUGE} GPUs:\n",
        f"Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/x {HUGE} 1 1 1% /\n",
    ],
)
def test_absurdly_long_numbers(text):
    run_all(text)


@pytest.mark.parametrize("bad", [None, b"bytes", 42, ["list"]])
def test_non_text_input_is_a_parse_error(bad):
    for parse in PARSERS:
        with pytest.raises(ParseError):
            parse(bad)


def test_safety_net_marks_bugs_as_internal():
    @parser
    def broken(text: str) -> int:
        return [][len(text)]

    with pytest.raises(ParseError) as info:
        broken("x")
    assert info.value.internal and isinstance(info.value.__cause__, IndexError)
