"""The NVLink domain of each golden node and the blocks of Slurm's topology/block plugin, one per
domain (an NVL72 rack): what ``burnin golden --format topology-block`` writes and the JSON export's
``nvlink_domain`` (docs/golden.md, "NVLink domains"). Pure: stored results and records in."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

FABRIC_CHECK = "gpu_fabric_state"
_BLOCK_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def nvlink_domain_of(rows: Iterable[Any]) -> dict[str, str] | None:
    """The multi-node NVLink domain a node's GPUs joined, from its latest gpu_fabric_state result
    (its ``cluster_uuid`` and ``clique_id`` metrics, which the check records only when every GPU
    is in one real domain: burnin/checks/gpu_fabric.py). None: no such result, or a node in no
    multi-node domain (an HGX node, CliqueId 0)."""
    found = [r for r in rows if r.check == FABRIC_CHECK]
    metrics = (max(found, key=lambda r: r.time).metrics if found else None) or {}
    clique, cluster = metrics.get("clique_id"), metrics.get("cluster_uuid")
    if not clique or not cluster:
        return None
    return {"cluster_uuid": str(cluster), "clique_id": str(clique)}


def block_name(domain: dict[str, str]) -> str:
    """``nvl-CLUSTERUUID-CLIQUEID``: stable across exports (a block keeps its name while its
    domain lasts) and one word, whatever text the store holds."""
    return _BLOCK_NAME_UNSAFE.sub("_", f"nvl-{domain['cluster_uuid']}-{domain['clique_id']}")


@dataclass(frozen=True)
class Block:
    name: str
    domain: dict[str, str]
    nodes: tuple[str, ...]


def blocks_of(golden: Sequence[dict[str, Any]]) -> tuple[list[Block], list[str]]:
    """The golden records grouped by NVLink domain, in the order their first node comes, and the
    names of the nodes with no domain (in no block)."""
    members: dict[str, list[str]] = {}
    domains: dict[str, dict[str, str]] = {}
    outside: list[str] = []
    for r in golden:
        if not (domain := r.get("nvlink_domain")):
            outside.append(r["name"])
            continue
        name = block_name(domain)
        members.setdefault(name, []).append(r["name"])
        domains[name] = domain
    return [Block(n, domains[n], tuple(nodes)) for n, nodes in members.items()], outside
