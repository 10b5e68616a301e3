"""AMD Instinct GPU checks of the preflight (docs/platforms.md, MI300X): the GPU count and model,
and each GPU's ECC counts per RAS block, from `amd-smi`, or from `rocm-smi` where amd-smi is not
installed (ROCm before 6) or does not answer. They read AMD's tools, so they run only on a profile
whose gpu.vendor is amd (burnin/checks/vendor.py), as the nvidia-smi checks only on NVIDIA ones.

What an ECC count means is the amdgpu driver's RAS (https://docs.kernel.org/gpu/amdgpu/ras.html):
a correctable error was fixed by ECC; an uncorrectable one was not (the data is lost, the driver
retires the page and may reset the GPU). A deferred error (DEFERRED_COUNT, printed beside the
two since ROCm 6.1: https://github.com/ROCm/amdsmi/blob/develop/CHANGELOG.md) is an uncorrected
error whose handling the hardware put off: judged as one not yet met, a reset and a second run.
rocm-smi prints no deferred count. Whichever tool answered, the same counts give the same findings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from bringup.profiles.load import Profile
from burnin.checks.base import Check, CommandOutput, Service, section_mark, sections
from burnin.checks.registry import register
from burnin.parsers import ParseError
from burnin.parsers.amd_smi import parse_ecc, parse_static
from burnin.parsers.rocm_smi import is_rocm_smi, parse_product, parse_ras
from burnin.result import Action, Finding, Result, Severity, critical, warning

AMD_STATIC = "amd-smi static --asic --bus --vbios --driver --board --ras"
AMD_ECC = "amd-smi metric --ecc --ecc-blocks"
ROCM_PRODUCT = "rocm-smi --showproductname --showbus --showserial"
ROCM_RAS = "rocm-smi --showrasinfo"
END = "end"
NO_AMD_SMI = "no-amd-smi"  # why amd-smi did not answer: one line
ROCM_SMI = "rocm-smi"  # rocm-smi's output, when it answered instead

T = TypeVar("T")


def _either(amd: str, rocm: str) -> str:
    """amd-smi when it is installed and answers (exits 0 and prints), else rocm-smi. amd-smi's
    output stands alone as before its fallback existed (a bare output, the lab's recordings);
    rocm-smi's follows the line saying why amd-smi did not answer, in its own section. amd-smi
    prints no end and no GPU count, so the command marks where the output ended (a cut, even
    between two whole GPU blocks, is seen); rocm-smi prints its own end line. Neither installed:
    exit 127, the reason naming both."""
    return "\n".join(
        [
            "if command -v amd-smi >/dev/null 2>&1; then",
            f"  out=$({amd}); rc=$?",
            '  if [ "$rc" -eq 0 ] && [ -n "$out" ]; then',
            "    printf '%s\\n' \"$out\"",
            f"    {section_mark(END)}",
            "    exit 0",
            "  fi",
            '  why="amd-smi exited $rc"',
            '  [ -n "$out" ] || why="$why and printed nothing"',
            "else",
            '  why="amd-smi is not installed"',
            "fi",
            *rocm_smi_instead(rocm),
        ]
    )


def rocm_smi_instead(rocm: str) -> list[str]:
    """The shell lines that run rocm-smi where amd-smi did not answer ($why says why): the reason
    and rocm-smi's output in sections of their own, its exit status the command's; neither
    installed: exit 127, the reason naming both."""
    return [
        section_mark(NO_AMD_SMI),
        'echo "$why"',
        section_mark(ROCM_SMI),
        "if command -v rocm-smi >/dev/null 2>&1; then",
        f"  {rocm}",
        "  rc=$?",
        f"  {section_mark(END)}",
        "  exit $rc",
        "fi",
        'echo "neither amd-smi nor rocm-smi answers: $why, and rocm-smi is not installed" >&2',
        "exit 127",
    ]


@dataclass(frozen=True)
class _Answer:
    """Which tool answered, its output, and whether that output is known whole."""

    tool: str  # "amd-smi" or "rocm-smi"
    text: str
    ended: bool  # the command's end mark follows amd-smi's output (rocm-smi prints its own end)
    why: str  # why amd-smi did not answer, when rocm-smi did instead

    def parsed(self, parse: Callable[[str], T]) -> T:
        """The output parsed; a refusal of rocm-smi's says why amd-smi was not read either."""
        try:
            return parse(self.text)
        except ParseError as exc:
            if self.why:
                raise ParseError(f"amd-smi did not answer ({self.why}); {exc}") from exc
            raise


def _answer(output: CommandOutput) -> _Answer:
    """The command's output, or a bare one handed to `burnin evaluate` (amd-smi's may be cut
    between sections: its failures stand, its pass does not; rocm-smi's is told by its header)."""
    parts = sections(output.stdout)
    ended = END in parts
    if ROCM_SMI in parts:
        return _Answer("rocm-smi", parts[ROCM_SMI], ended, parts.get(NO_AMD_SMI, "").strip())
    tool = "rocm-smi" if is_rocm_smi(parts[""]) else "amd-smi"
    return _Answer(tool, parts[""], ended, "")


def model_name(name: str) -> str:
    """A model as amd-smi's MARKET_NAME spells it across releases ('MI300X', 'AMD Instinct
    MI300X', 'MI300X-O'), or rocm-smi's Card Series ('[Instinct MI300A]', 'AMD Instinct MI300X OAM'):
    compared without the brand and the form factor (OAM, the OCP Accelerator Module the MI300X comes
    as: https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html; amd-smi's '-O' on a
    GPU whose SLOT_TYPE is OAM, AMD's amd-smi blog on rocm.blogs.amd.com)."""
    return name.removeprefix("AMD ").removeprefix("Instinct ").strip().removesuffix(" OAM").removesuffix("-O")


@dataclass(frozen=True)
class _Gpu:
    """One GPU as either tool lists it."""

    index: int
    where: str  # 'GPU 0 (0000:0c:00.0, serial X)'
    name: str | None  # the model as printed; None when the tool printed none
    names: tuple[str, ...]  # the models that name stands for (rocm-smi: each of pci.ids's)
    shown: str  # the line naming it


def _where(index: int, bdf: str | None, serial: str | None) -> str:
    return f"GPU {index} ({bdf or 'no BDF'}{f', serial {serial}' if serial else ''})"


def _amd_gpus(text: str) -> list[_Gpu]:
    return [
        _Gpu(
            g.index,
            _where(g.index, g.bdf, g.serial),
            g.market_name,
            (g.market_name,) if g.market_name else (),
            f"MARKET_NAME: {g.market_name}",
        )
        for g in parse_static(text)
    ]


@register
class AmdGpuInventory(Check):
    name = "amd_gpu_inventory"
    stages = ("preflight",)
    service = Service.ALWAYS  # read-only, seconds: `burnin health` reads it beside a running job
    reads = ("amd-smi static", "rocm-smi --showproductname")
    judges = ("gpu.count", "gpu.model")
    timeout_s = 90
    description = "AMD GPU count and model (amd-smi static MARKET_NAME, else rocm-smi's Card Series) as the profile says"

    def command(self, profile: Profile) -> str:
        return _either(AMD_STATIC, ROCM_PRODUCT)

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        answer = _answer(output)
        if answer.tool == "rocm-smi":
            gpus = [
                _Gpu(g.index, _where(g.index, g.bus, g.serial), g.series, g.names, f"Card Series: {g.series}")
                for g in answer.parsed(parse_product)
            ]
            whole, listed = True, "GPU[N] listed"  # the parser refuses a log without its end line
            unnamed = "no GPU's Card Series names a model: the device ids are unknown to this rocm-smi"
        else:
            gpus, whole, listed = answer.parsed(_amd_gpus), answer.ended, "GPU blocks"
            unnamed = "no GPU prints ASIC MARKET_NAME: run amd-smi static with --asic"
        findings: list[Finding] = []
        # Fewer GPUs in a bare output may be a cut between GPU blocks (a cut inside the last one is
        # seen against the first); more are more, cut or not.
        short = len(gpus) < profile.gpu.count and not whole
        if len(gpus) != profile.gpu.count and not short:
            findings.append(
                critical(
                    f"{len(gpus)} GPU(s) found, the profile has {profile.gpu.count}",
                    Action.RESEAT,
                    f"{listed}: {', '.join(str(g.index) for g in gpus)}",
                )
            )
        want = model_name(profile.gpu.model)
        for gpu in gpus:
            if not gpu.names:
                continue  # judged by the others; the count above still holds it
            if want not in {model_name(n) for n in gpu.names}:
                findings.append(
                    critical(
                        f"{gpu.where} is {gpu.name!r}, the profile wants {profile.gpu.model!r}",
                        Action.RMA,
                        gpu.shown,
                        f"GPU {gpu.index}",
                    )
                )
        # A wrong count stands; without any GPU's model nothing passes.
        if not findings and not any(g.names for g in gpus):
            raise ParseError(unnamed)
        if not findings and (short or (len(gpus) == 1 and not whole)):
            # one bare block has no other to be held to: it may be cut anywhere
            raise ParseError(
                f"{len(gpus)} GPU block(s) of {profile.gpu.count}, and no end: cut, or GPUs missing"
            )
        return Result.judged(self.name, findings)


@dataclass(frozen=True)
class _Count:
    """One RAS block's ECC counts on one GPU, as either tool prints them."""

    gpu: int
    block: str
    correctable: int
    uncorrectable: int
    deferred: int | None  # amd-smi since ROCm 6.1; rocm-smi never
    shown: str


def _amd_counts(text: str) -> tuple[list[int], list[_Count]]:
    gpus = parse_ecc(text)
    counts = []
    for gpu in gpus:
        blocks = gpu.blocks or ({"total": gpu.total} if gpu.total else {})
        for block, c in blocks.items():
            shown = (
                f"{block}: CORRECTABLE_COUNT: {c.correctable} UNCORRECTABLE_COUNT: {c.uncorrectable}"
                f" DEFERRED_COUNT: {c.deferred if c.deferred is not None else 'N/A'}"
            )
            counts.append(_Count(gpu.index, block, c.correctable, c.uncorrectable, c.deferred, shown))
    return [g.index for g in gpus], counts


def _rocm_counts(text: str) -> tuple[list[int], list[_Count]]:
    ras = parse_ras(text)  # a whole log: the parser refuses one without its end line
    counts = [
        _Count(
            gpu.index,
            b.name,
            b.correctable,
            b.uncorrectable,
            None,
            f"{b.name} {b.status}: Correctable Error {b.correctable} Uncorrectable Error {b.uncorrectable}",
        )
        for gpu in ras
        for b in gpu.blocks
        if b.correctable is not None and b.uncorrectable is not None
    ]
    return [g.index for g in ras], counts


def _ecc_findings(count: _Count) -> list[Finding]:
    subject = f"GPU {count.gpu}"
    findings = []
    if count.uncorrectable:
        findings.append(
            critical(
                f"{subject} {count.block}: {count.uncorrectable} uncorrectable ECC error(s): the data was "
                "lost; replace the GPU (HBM when the block is UMC)",
                Action.RMA,
                count.shown,
                subject,
            )
        )
    if count.deferred:
        findings.append(
            critical(
                f"{subject} {count.block}: {count.deferred} deferred (poisoned) error(s): reset the GPU "
                "(amd-smi reset -G) and run again; a repeat is a replacement",
                Action.RESET_GPU,
                count.shown,
                subject,
            )
        )
    if count.correctable:
        findings.append(
            warning(
                f"{subject} {count.block}: {count.correctable} correctable ECC error(s), fixed by ECC: watch",
                Action.MONITOR,
                count.shown,
                subject,
            )
        )
    return findings


@register
class AmdGpuEcc(Check):
    name = "amd_gpu_ecc"
    stages = ("preflight",)
    service = Service.ALWAYS  # counters only, as nvidia-smi's ECC checks in service
    reads = ("amd-smi metric --ecc", "rocm-smi --showrasinfo")
    judges = ("gpu.count",)
    timeout_s = 90
    description = (
        "no uncorrectable or deferred ECC error in any RAS block of any AMD GPU (amd-smi metric --ecc, "
        "else rocm-smi --showrasinfo); correctable errors warn"
    )

    def command(self, profile: Profile) -> str:
        return _either(AMD_ECC, ROCM_RAS)

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        answer = _answer(output)
        if answer.tool == "rocm-smi":
            (gpus, counts), whole = answer.parsed(_rocm_counts), True
        else:
            (gpus, counts), whole = answer.parsed(_amd_counts), answer.ended
        findings = [f for count in counts for f in _ecc_findings(count)]
        # An error the output shows stands. A pass or a warning needs every GPU's every block: fewer
        # GPUs than the profile is a cut or a missing GPU (amd_gpu_inventory counts them), and a
        # bare output may be cut between two blocks.
        if not any(f.severity is Severity.CRITICAL for f in findings):
            if not whole:
                raise ParseError(
                    f"a bare {answer.tool} output has no end: a cut between two blocks would pass"
                )
            if len(gpus) < profile.gpu.count:
                raise ParseError(f"ECC counts of {len(gpus)} GPU(s), the profile has {profile.gpu.count}")
            if uncounted := sorted(set(gpus) - {c.gpu for c in counts}):
                raise ParseError(
                    f"{answer.tool} read no block's ECC counts of GPU(s) {uncounted}: RAS not supported"
                )
        return Result.judged(self.name, findings)
