"""The order comparison's ``gpu (BMC)`` part (pure): the GPUs the BMC lists, as discovery
recorded them (``hardware.gpus``, docs/redfish.md), against the order's count and model.
burnin/accept/conformance.py calls it beside nvidia-smi's ``gpu`` part."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bringup.inventory.delivery import OrderProfile
from bringup.profiles.suggest import model_words
from burnin.accept.conformance_model import Collected, ResultRecord
from burnin.result import Action


def _bmc_slot(gpu: Mapping[str, Any]) -> str:
    return str(gpu.get("slot") or gpu.get("id") or "?")


def compare(
    order: OrderProfile, hw: Mapping[str, Any], results: Mapping[str, ResultRecord], out: Collected
) -> None:
    """The GPUs the BMC lists (discovery's ``hardware.gpus``, docs/redfish.md) against the
    order's count and model, each finding naming the BMC's slot. A BMC that lists no GPU is not
    judged, and the row says so: many BMCs do not list them, and nvidia-smi's list (``gpu``)
    is the one the order is always judged by. Where the BMC lists fewer and nvidia-smi gave
    serials, the GPUs it lacks are named by nvidia-smi's slot."""
    want = order.gpu
    if want.model is None and want.count is None:
        return
    part = "gpu (BMC)"
    ordered = " ".join(x for x in (f"{want.count}x" if want.count else "", want.model or "") if x)
    gpus = [g for g in hw.get("gpus") or [] if isinstance(g, Mapping)]
    if not gpus:
        why = (hw.get("unavailable") or {}).get("gpus") or "the BMC lists no GPU"
        out.row(part, ordered, f"not judged: {why}", None)
        return
    ok = True
    if want.count is not None and len(gpus) != want.count:
        ok = False
        fewer = len(gpus) < want.count
        finding = f"the BMC lists {len(gpus)} GPUs, the order has {want.count}"
        where = {"slot": "; ".join(_bmc_slot(g) for g in gpus)}
        seen = {g.get("serial") for g in gpus}
        os_gpus = (getattr(results.get("gpu_versions"), "metrics", None) or {}).get("gpu_list")
        if fewer and None not in seen and isinstance(os_gpus, list):
            lacking = [g for g in os_gpus if isinstance(g, Mapping) and g.get("serial") not in seen]
            if lacking:
                named = [f"GPU {g.get('index')} ({g.get('bus_id')})" for g in lacking]
                finding += f": it lacks nvidia-smi's {', '.join(named)}"
                where = {
                    "slot": "; ".join(named),
                    "serial": "; ".join(str(g.get("serial")) for g in lacking if g.get("serial")),
                }
        elif not fewer:
            finding += f" (slots {where['slot']})"
        out.add(
            part,
            finding,
            Action.RESEAT if fewer else Action.RMA,
            ordered=str(want.count),
            found=str(len(gpus)),
            **where,
        )
    for gpu in gpus:
        if want.model is not None and model_words(want.model) not in model_words(gpu.get("model")):
            ok = False
            slot = _bmc_slot(gpu)
            out.add(
                part,
                f"the BMC lists {slot} as {gpu.get('model')!r}, the order has {want.model!r}",
                Action.RMA,
                slot=slot,
                serial=str(gpu.get("serial") or ""),
                ordered=want.model,
                found=str(gpu.get("model")),
            )
    models = sorted({str(g.get("model")) for g in gpus})
    out.row(part, ordered, f"{len(gpus)}x {', '.join(models)}", ok)
