"""Which GPU's memory loads each HCA in the ib stage's GPUDirect mode (pure).

GPUDirect RDMA moves data between an HCA and GPU memory over PCIe; it runs at line rate only
between a GPU and the NIC under the same PCIe switch (``nvidia-smi topo -m``: PIX/PXB), and a
pair that crosses the CPU link shows as low bandwidth (docs/burnin.md, ib stage). The profile's
GPU-to-NIC pairs say which GPU is nearest to each HCA; without them the k-th HCA in natural
order (mlx5_0, mlx5_1, ..., mlx5_10) gets GPU k, which is how HGX baseboards are usually cabled
but is not checked, so the stage says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from bringup.profiles.load import Profile
from burnin.checks.ib_fabric import on_compute_fabric
from burnin.checks.ib_load import IbPortInfo
from burnin.result import Result, info


@dataclass(frozen=True)
class GpuPairing:
    gpus: dict[str, int]  # HCA -> GPU index (CUDA's order: perftest --use_cuda=<index>)
    note: str  # how the pairing was made when not from the profile's pairs; '' otherwise


def _natural(name: str) -> tuple[str, int]:
    m = re.match(r"^(.*?)(\d+)$", name)
    return (m.group(1), int(m.group(2))) if m else (name, -1)


def nearest_gpus(hcas: Iterable[str], gpu_count: int, pairs: Mapping[str, int] | None = None) -> GpuPairing:
    """Each HCA's GPU: the profile's ``pairs`` where they name it, else by index (wrapping when
    there are more HCAs than GPUs)."""
    ordered = sorted(set(hcas), key=_natural)
    if gpu_count <= 0:
        return GpuPairing({}, "no GPUs in the profile: no HCA can be loaded from GPU memory")
    known = dict(pairs or {})
    gpus: dict[str, int] = {}
    guessed = []
    for index, hca in enumerate(ordered):
        if hca in known:
            gpus[hca] = known[hca]
        else:
            gpus[hca] = index % gpu_count
            guessed.append(hca)
    notes = []
    if guessed:
        whom = "every HCA" if len(guessed) == len(ordered) else ", ".join(guessed)
        notes.append(
            f"{whom} paired with a GPU by index (HCA k with GPU k): the profile names no GPU-to-NIC "
            "pairs" + ("" if not known else " for these")
        )
    if len(ordered) > gpu_count:
        notes.append(f"{len(ordered)} HCA(s) share {gpu_count} GPU(s)")
    return GpuPairing(gpus, "; ".join(notes))


def with_gpus(ports: list[IbPortInfo], profile: Profile, layer: str) -> tuple[list[IbPortInfo], str]:
    """The node's compute-fabric ports (``layer`` and ib.ca_types: burnin/checks/ib_fabric.py), each
    with the GPU whose memory loads it (nearest_gpus), and how the pairing was made. The profile's
    GPU-to-NIC pairs are not a profile field yet: every HCA is paired by index, and the note says so."""
    hcas = [p.hca for p in ports if on_compute_fabric(p.link_layer, p.ca_type, layer, profile.ib.ca_types)]
    pairing = nearest_gpus(hcas, profile.gpu.count)
    dmabuf = profile.diag.ib_gdr_dmabuf
    out = [
        replace(p, gpu=pairing.gpus[p.hca], gpu_dmabuf=dmabuf) if p.hca in pairing.gpus else p for p in ports
    ]
    return out, pairing.note


def gdr_result(result: Result, ports: list[IbPortInfo], note: str) -> Result:
    """The node's result told that its ports were loaded from GPU memory, and from which GPU."""
    gpus = {p.metric_key: p.gpu for p in ports if p.gpu is not None}
    how = "--use_cuda --use_cuda_dmabuf" if any(p.gpu_dmabuf for p in ports) else "--use_cuda"
    said = info(
        f"ports loaded from GPU memory (GPUDirect RDMA, ib_write_bw {how}): "
        + ", ".join(f"{k} <- GPU {g}" for k, g in gpus.items())
        + (f"; {note}" if note else "")
    )
    return replace(result, metrics={**result.metrics, "gdr": gpus}, findings=(*result.findings, said))
