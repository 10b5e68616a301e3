"""Every check, by name. One module per domain; each check = command() + evaluate(), declaring its
stages, service, the tools it reads and the profile fields it judges (burnin.checks.base.Check),
and registering itself where it is defined (burnin.checks.registry). A new domain module is one
line here; a new check in a module is nothing here."""

from __future__ import annotations

# Imported for their registrations. The order is the order their checks run within a stage (a
# module's checks in the order it defines them), so isort leaves it alone.
# isort: off
from burnin.checks import gpu  # noqa: F401
from burnin.checks import gpu_fabric  # noqa: F401
from burnin.checks import imex  # noqa: F401
from burnin.checks import gpu_load  # noqa: F401
from burnin.checks import gpu_bmc  # noqa: F401
from burnin.checks import gpu_amd  # noqa: F401
from burnin.checks import gpu_amd_xgmi  # noqa: F401
from burnin.checks import gpu_rvs  # noqa: F401
from burnin.checks import kernel  # noqa: F401
from burnin.checks import ib  # noqa: F401
from burnin.checks import host  # noqa: F401
from burnin.checks import inventory  # noqa: F401
from burnin.checks import host_perf  # noqa: F401
from burnin.checks import nccl_local  # noqa: F401
from burnin.checks import copy_bandwidth  # noqa: F401
from burnin.checks import pcie  # noqa: F401
from burnin.checks import pcie_topo  # noqa: F401

# Checks only `burnin evaluate` applies (to an operator's saved output): no stage runs them.
from burnin.checks import gpu_evidence  # noqa: F401
from burnin.checks import gpu_table  # noqa: F401
from burnin.checks import pcie_lspci  # noqa: F401
from burnin.checks import ib_evidence  # noqa: F401
from burnin.checks import nccl_evidence  # noqa: F401
from burnin.checks import nvlink_evidence  # noqa: F401

# isort: on
from burnin.checks.base import Check
from burnin.checks.registry import REGISTRY

__all__ = ["ALL_CHECKS", "EVIDENCE_CHECKS", "REGISTRY"]

# The checks the stages run (each stage takes those declaring it, in this order).
ALL_CHECKS: dict[str, Check] = REGISTRY.stage_run()
# The checks only `burnin evaluate` applies; no stage sends their commands to a node.
EVIDENCE_CHECKS: dict[str, Check] = REGISTRY.evaluate_only()
