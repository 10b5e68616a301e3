"""Checks that judge tool outputs handed to `burnin evaluate` but that no stage runs: an
operator's `lspci -vv`, an `ib_write_bw` from a colleague, the nccl-tests log of a job that
died. They share the Check model (command() + evaluate()) so `judge` guards them the same way;
they declare no stage, so they are kept out of burnin.checks.ALL_CHECKS and no stage sends their
commands to a node.
"""

from __future__ import annotations

from burnin.checks import EVIDENCE_CHECKS

__all__ = ["EVIDENCE_CHECKS"]
