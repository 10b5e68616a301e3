"""What an nvidia-smi output says of each GPU's identity, judged alike by every check that reads
one: the model it names, its MIG mode, and (nvidia-smi -q) its PCIe link (docs/burnin.md, "A PASS
covers what the output shows")."""

from __future__ import annotations

from bringup.profiles.load import Profile
from burnin.parsers.nvidia_smi import PcieLink
from burnin.result import Action, Finding, critical, warning


def model_findings(gpus: list[tuple[str, str | None]], want: str) -> list[Finding]:
    """A failure for each GPU, named by (subject, name as printed), that is not the profile's model."""
    return [
        critical(
            f"{subject} is {name!r}, the profile wants {want!r}", Action.RMA, f"{subject}: {name}", subject
        )
        for subject, name in gpus
        if name is not None and name != want
    ]


def mig_finding(where: str, subject: str, evidence: str) -> Finding:
    """A GPU in MIG mode on a node the profile describes as whole GPUs: no fault, a configuration to
    undo. In MIG mode a GPU has no peer-to-peer over NVLink or PCIe
    (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/deployment-considerations.html), which a
    multi-GPU training node's NCCL and burn-in need."""
    return warning(
        f"{where} is in MIG mode: a whole-GPU node runs with it off (nvidia-smi -i N -mig 0, then reset the GPU)",
        Action.RECONFIGURE,
        evidence,
        subject,
    )


def link_findings(where: str, subject: str, link: PcieLink, profile: Profile) -> list[Finding]:
    """The GPU's PCIe link (PCI > GPU Link Info): narrower than the profile, or unable to reach its
    generation. The current generation drops at idle (power saving): only Max is held to it."""
    want_gen, want_width = profile.pcie.gpu.gen, profile.pcie.gpu.width
    shown = f"PCIe Generation Max : {link.gen_max}, Link Width Current : {link.width_current}x"
    found = []
    if link.width_current is not None and want_width is not None and link.width_current < want_width:
        found.append(
            critical(
                f"{where} link is x{link.width_current}, expected x{want_width}",
                Action.RESEAT,
                shown,
                subject,
            )
        )
    if link.gen_max is not None and want_gen is not None and link.gen_max < want_gen:
        found.append(
            critical(
                f"{where} can reach only Gen{link.gen_max}, expected Gen{want_gen}: the slot, riser or a BIOS "
                "PCIe speed setting",
                Action.RESEAT,
                shown,
                subject,
            )
        )
    return found
