"""AMD Instinct GPU checks of the preflight, from `amd-smi` (docs/platforms.md, MI300X): the GPU
count and model, and each GPU's ECC counts per RAS block. They read AMD's tool, so they run only
on a profile whose gpu.vendor is amd (burnin/checks/vendor.py), as the nvidia-smi checks only on
NVIDIA ones.

What an ECC count means is the amdgpu driver's RAS (https://docs.kernel.org/gpu/amdgpu/ras.html):
a correctable error was fixed by ECC; an uncorrectable one was not (the data is lost, the driver
retires the page and may reset the GPU). A deferred error (DEFERRED_COUNT, printed beside the
two since ROCm 6.1: https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md) is an uncorrected
error whose handling the hardware put off: judged as one not yet met, a reset and a second run.
"""

from __future__ import annotations

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service, section_mark, sections
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.amd_smi import AmdGpu, parse_ecc, parse_static
from burnin.result import Action, Finding, Result, Severity, critical, warning

AMD_STATIC = "amd-smi static --asic --bus --vbios --driver --board --ras"
AMD_ECC = "amd-smi metric --ecc --ecc-blocks"
END = "end"


def _ended(tool: str) -> str:
    """amd-smi prints no end and no GPU count: the command marks where its output ended, so a
    missing end (a cut, even between two whole GPU or block sections) is seen."""
    return "\n".join([tool, "rc=$?", section_mark(END), "exit $rc"])


def _body(output: CommandOutput) -> tuple[str, bool]:
    """The amd-smi output and whether it is known whole (the command's end mark follows it). A
    bare output (a file handed to `burnin evaluate`) may be cut between sections: its failures
    stand, its pass does not."""
    parts = sections(output.stdout)
    return parts[""], END in parts


def model_name(name: str) -> str:
    """A model as amd-smi's MARKET_NAME spells it across releases ('MI300X', 'AMD Instinct
    MI300X'): compared without the brand."""
    return name.removeprefix("AMD ").removeprefix("Instinct ").strip()


def _where(gpu: AmdGpu) -> str:
    serial = f", serial {gpu.serial}" if gpu.serial else ""
    return f"GPU {gpu.index} ({gpu.bdf or 'no BDF'}{serial})"


@register
class AmdGpuInventory(Check):
    name = "amd_gpu_inventory"
    stages = ("preflight",)
    service = Service.ALWAYS  # read-only, seconds: `burnin health` reads it beside a running job
    reads = ("amd-smi static",)
    judges = ("gpu.count", "gpu.model")
    timeout_s = 90
    description = "AMD GPU count and model (amd-smi static MARKET_NAME) as the profile says"

    def command(self, profile: Profile) -> str:
        return _ended(AMD_STATIC)

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        text, whole = _body(output)
        gpus = parse_static(text)
        findings: list[Finding] = []
        # Fewer GPUs in a bare output may be a cut between GPU blocks (a cut inside the last one is
        # seen against the first); more are more, cut or not.
        short = len(gpus) < profile.gpu.count and not whole
        if len(gpus) != profile.gpu.count and not short:
            findings.append(
                critical(
                    f"{len(gpus)} GPU(s) found, the profile has {profile.gpu.count}",
                    Action.RESEAT,
                    f"GPU blocks: {', '.join(str(g.index) for g in gpus)}",
                )
            )
        want = model_name(profile.gpu.model)
        for gpu in gpus:
            if gpu.market_name is None:
                continue  # judged by the others; the count above still holds it
            if model_name(gpu.market_name) != want:
                findings.append(
                    critical(
                        f"{_where(gpu)} is {gpu.market_name!r}, the profile wants {profile.gpu.model!r}",
                        Action.RMA,
                        f"MARKET_NAME: {gpu.market_name}",
                        f"GPU {gpu.index}",
                    )
                )
        if not any(g.market_name for g in gpus):
            raise ParseError("no GPU prints ASIC MARKET_NAME: run amd-smi static with --asic")
        if not findings and (short or (len(gpus) == 1 and not whole)):
            # one bare block has no other to be held to: it may be cut anywhere
            raise ParseError(
                f"{len(gpus)} GPU block(s) of {profile.gpu.count}, and no end: cut, or GPUs missing"
            )
        return Result.judged(self.name, findings)


@register
class AmdGpuEcc(Check):
    name = "amd_gpu_ecc"
    stages = ("preflight",)
    service = Service.ALWAYS  # counters only, as nvidia-smi's ECC checks in service
    reads = ("amd-smi metric --ecc",)
    judges = ("gpu.count",)
    timeout_s = 90
    description = (
        "no uncorrectable or deferred ECC error in any RAS block of any AMD GPU; correctable errors warn"
    )

    def command(self, profile: Profile) -> str:
        return _ended(AMD_ECC)

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        text, whole = _body(output)
        gpus = parse_ecc(text)
        findings: list[Finding] = []
        for gpu in gpus:
            subject = f"GPU {gpu.index}"
            blocks = gpu.blocks or ({"total": gpu.total} if gpu.total else {})
            for block, count in blocks.items():
                shown = (
                    f"{block}: CORRECTABLE_COUNT: {count.correctable} UNCORRECTABLE_COUNT: {count.uncorrectable}"
                    f" DEFERRED_COUNT: {count.deferred if count.deferred is not None else 'N/A'}"
                )
                if count.uncorrectable:
                    findings.append(
                        critical(
                            f"{subject} {block}: {count.uncorrectable} uncorrectable ECC error(s): the data was "
                            "lost; replace the GPU (HBM when the block is UMC)",
                            Action.RMA,
                            shown,
                            subject,
                        )
                    )
                if count.deferred:
                    findings.append(
                        critical(
                            f"{subject} {block}: {count.deferred} deferred (poisoned) error(s): reset the GPU "
                            "(amd-smi reset -G) and run again; a repeat is a replacement",
                            Action.RESET_GPU,
                            shown,
                            subject,
                        )
                    )
                if count.correctable:
                    findings.append(
                        warning(
                            f"{subject} {block}: {count.correctable} correctable ECC error(s), fixed by ECC: watch",
                            Action.MONITOR,
                            shown,
                            subject,
                        )
                    )
        # An error the output shows stands. A pass or a warning needs every GPU's every block: fewer
        # GPUs than the profile is a cut or a missing GPU (amd_gpu_inventory counts them), and a
        # bare output may be cut between two blocks.
        if not any(f.severity is Severity.CRITICAL for f in findings):
            if not whole:
                raise ParseError("a bare amd-smi output has no end: a cut between two blocks would pass")
            if len(gpus) < profile.gpu.count:
                raise ParseError(f"ECC counts of {len(gpus)} GPU(s), the profile has {profile.gpu.count}")
        return Result.judged(self.name, findings)
