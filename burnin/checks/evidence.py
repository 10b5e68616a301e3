"""Checks that judge tool outputs handed to `burnin evaluate` but that no stage runs: an
operator's `lspci -vv`, an `ib_write_bw` from a colleague, the nccl-tests log of a job that
died. They share the Check model (command() + evaluate()) so `judge` guards them the same way;
they are kept out of burnin.checks.ALL_CHECKS so that no stage sends their commands to a node.
"""

from __future__ import annotations

from burnin.checks.base import Check
from burnin.checks.gpu_evidence import GpuBurnLog, GpuQueryCsv
from burnin.checks.ib_evidence import PerfqueryCounters, PerftestBandwidth
from burnin.checks.nccl_evidence import NcclTestsOutput
from burnin.checks.pcie_lspci import LspciLinks

_CHECKS: list[Check] = [
    GpuQueryCsv(),
    GpuBurnLog(),
    LspciLinks(),
    PerftestBandwidth(),
    PerfqueryCounters(),
    NcclTestsOutput(),
]

EVIDENCE_CHECKS: dict[str, Check] = {c.name: c for c in _CHECKS}
