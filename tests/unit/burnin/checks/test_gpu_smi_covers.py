"""A PASS covers what the output shows (docs/burnin.md): over every passing nvidia-smi sample of the
index, each expectation of the profile that the output shows (GPU count, model, driver, PCIe link,
NVLink links, ECC mode) is judged: the profile changed to want something else, or the output
changed to show a wrong value, is never a passing verdict. What the output cannot show is listed
in the result's not_covered, and changing it changes nothing.

What an output shows is read here from the tool's own format (its documentation), not from the
checks: the property holds the checks to the output, not to themselves."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from bringup.profiles.load import Profile, apply_overrides, load_profile
from burnin.checks import REGISTRY
from burnin.checks.base import CommandOutput
from burnin.evaluate.handed_in import Evaluation, evaluate_text, judging_checks
from burnin.result import PASSING, Verdict
from tests import sample_index
from tests.profiles import SHIPPED_DIR, SHIPPED_NAME, shipped

SMI_TOOLS = (
    "nvidia-smi -q",
    "nvidia-smi -q -x (XML)",
    "nvidia-smi -q -d",
    "nvidia-smi -L",
    "nvidia-smi nvlink -s",
    "nvidia-smi --query-gpu CSV",
    "nvidia-smi (default table)",
)
_M = re.MULTILINE
_CSV_HEADER = re.compile(
    r"^(?:index|name|pci\.bus_id|uuid|pcie\.link\.|timestamp|driver_version)[\w.]*(?: \[[^\]]*\])?(?:, .*)?$",
    _M,
)


def _csv_columns(text: str) -> set[str]:
    found = {c.strip().split(" [")[0] for m in _CSV_HEADER.finditer(text) for c in m.group(0).split(",")}
    for m in re.finditer(r"--query-gpu=([\w.,]+)", text):
        found |= set(m.group(1).split(","))
    return found


def shows(tool: str, text: str) -> set[str]:
    """The profile fields an output of ``tool`` prints a value for (nvidia-smi's formats)."""
    if tool in ("nvidia-smi -q", "nvidia-smi -q -d"):
        seen = {"gpu.count"}  # 'Attached GPUs' and one block per GPU
        if re.search(r"^\s+Product Name\s+: \S", text, _M):
            seen.add("gpu.model")
        if re.search(r"^Driver Version\s+: \d", text, _M):
            seen.add("pins.driver")
        if re.search(r"^\s+Link Width\n\s+Max\s+: \d+x\n\s+Current\s+: \d+x", text, _M):
            seen.add("pcie.gpu.width")
        if re.search(r"^\s+PCIe Generation\n\s+Max\s+: \d", text, _M):
            seen.add("pcie.gpu.gen")
        return seen
    if tool == "nvidia-smi -q -x (XML)":
        seen = {"gpu.count"}  # <attached_gpus> and one <gpu> element per GPU
        if re.search(r"<product_name>\S", text):
            seen.add("gpu.model")
        if re.search(r"<driver_version>\d", text):
            seen.add("pins.driver")
        if re.search(r"<max_link_width>\d+x</max_link_width>\s*<current_link_width>\d+x<", text):
            seen.add("pcie.gpu.width")
        if re.search(r"<max_link_gen>\d", text):
            seen.add("pcie.gpu.gen")
        return seen
    if tool == "nvidia-smi -L":
        return {"gpu.count", "gpu.model"}
    if tool == "nvidia-smi nvlink -s":
        return {"gpu.count", "gpu.model", "gpu.nvlink_links_per_gpu"}
    if tool == "nvidia-smi --query-gpu CSV":
        columns = _csv_columns(text)
        seen = set() if re.search(r"--query-gpu.*\s(?:-i\s*\S|--id[=\s])", text) else {"gpu.count"}
        for field, column in (
            ("gpu.model", "name"),
            ("pins.driver", "driver_version"),
            ("pcie.gpu.gen", "pcie.link.gen.max"),
            ("pcie.gpu.width", "pcie.link.width.current"),
        ):
            if column in columns:
                seen.add(field)
        return seen
    if tool == "nvidia-smi (default table)":
        # A row per GPU (name, bus id), the driver in its title, then the Processes box after
        # every GPU: with it, the rows are the node's count (unless the command line shows -i).
        seen = {"gpu.model", "pins.driver"}
        if re.search(r"^\|\s*Processes:", text, _M) and not re.search(r"nvidia-smi.*\s-i\s*\S", text):
            seen.add("gpu.count")
        return seen
    raise AssertionError(f"no format known for {tool}")


# For each expectation, profile changes no passing output of the profile can still satisfy.
WRONG: dict[str, Callable[[Profile], list[str]]] = {
    "gpu.count": lambda p: [f"gpu.count={n}" for n in (p.gpu.count + 1, p.gpu.count - 1) if n > 0],
    "gpu.model": lambda p: ["gpu.model=NVIDIA GeForce RTX 4090"],
    "pins.driver": lambda p: ["pins.driver=999.99.99"],
    # A profile that leaves the generation unset (the NVL72 trays) is given one past PCIe 6's.
    "pcie.gpu.gen": lambda p: [f"pcie.gpu.gen={(p.pcie.gpu.gen or 6) + 1}"],
    "pcie.gpu.width": lambda p: ["pcie.gpu.width=32"],
    "gpu.nvlink_links_per_gpu": lambda p: [f"gpu.nvlink_links_per_gpu={p.gpu.nvlink_links_per_gpu + 1}"],
}
# Output changes that show a wrong value for an expectation that is no profile field.
WRONG_OUTPUT: dict[str, Callable[[str], str]] = {
    "ECC mode": lambda text: re.sub(r"(ECC Mode\n\s+Current\s+: )Enabled", r"\1Disabled", text, count=1),
    "ECC mode element": lambda text: text.replace("<current_ecc>Enabled<", "<current_ecc>Disabled<", 1),
    "NVLink rate": lambda text: re.sub(r"(Link 0: )(\d+(?:\.\d+)?) GB/s", r"\g<1>1 GB/s", text, count=1),
    "ECC mode column": lambda text: _csv_ecc_disabled(text),
}


def _csv_ecc_disabled(text: str) -> str:
    """The CSV with its first GPU's ecc.mode.current Disabled (the column found by its header: a
    wide query prints other Enabled columns before it, persistence_mode among them)."""
    lines = text.split("\n")
    for i, line in enumerate(lines[:-1]):
        columns = [c.strip().split(" [")[0] for c in line.split(",")]
        if "ecc.mode.current" in columns:
            at = columns.index("ecc.mode.current")
            cells = lines[i + 1].split(", ")
            if at < len(cells) and cells[at] == "Enabled":
                cells[at] = "Disabled"
                return "\n".join([*lines[: i + 1], ", ".join(cells), *lines[i + 2 :]])
    return text


# A whole --query-gpu CSV of every column the profile judges: no real capture has them all.
FULL_CSV = (
    "index, name, driver_version, ecc.mode.current, pcie.link.gen.max, pcie.link.width.current\n"
    + "".join(f"{i}, NVIDIA H100 80GB HBM3, 535.183.01, Enabled, 5, 16\n" for i in range(8))
)


def _passing() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(id, tool, output, overrides) of every passing nvidia-smi sample `burnin evaluate` judges."""
    found = [
        (row.id(), row.tool, row.output(), row.overrides)
        for row in sample_index.evaluate_rows()
        if row.tool in SMI_TOOLS and row.verdict == "PASS"
    ]
    return [*found, ("FULL_CSV", "nvidia-smi --query-gpu CSV", FULL_CSV, ())]


PASSING_SAMPLES = _passing()
# The shipped profile each sample is judged on (its index row's; the CSV above: the H100's).
_PROFILE_OF = {row.id(): row.profile for row in sample_index.evaluate_rows()}


def base_profile(sample: str, overrides: tuple[str, ...]) -> Profile:
    profile, problems = load_profile(_PROFILE_OF.get(sample, SHIPPED_NAME), SHIPPED_DIR)
    assert profile is not None, (sample, problems)
    return apply_overrides(profile, overrides)


def _evaluate(text: str, profile: Profile) -> Evaluation:
    return evaluate_text(text, profile)


def violations(samples=PASSING_SAMPLES, evaluate=_evaluate) -> list[str]:
    """Every way the rule is broken over ``samples``, as lines a person reads."""
    broken = []
    for sample, tool, text, overrides in samples:
        profile = base_profile(sample, overrides)
        base = evaluate(text, profile)
        if base.verdict is not Verdict.PASS:
            broken.append(f"{sample}: not a PASS to start with ({base.verdict}: {base.reason})")
            continue
        shown = shows(tool, text)
        for field in sorted(shown):
            for change in WRONG[field](profile):
                got = evaluate(text, apply_overrides(profile, [change]))
                if got.verdict in PASSING:
                    broken.append(f"{sample}: shows {field}, yet passes with {change} ({got.verdict})")
        for what, change in WRONG_OUTPUT.items():
            wrong = change(text)
            if wrong != text and (got := evaluate(wrong, profile)).verdict in PASSING:
                broken.append(f"{sample}: shows a wrong {what}, yet {got.verdict}")
        for result in base.results:
            judges = set(judging_checks()[result.check].judges) & set(WRONG)
            uncovered = set(result.not_covered)
            if not uncovered <= set(judging_checks()[result.check].judges):
                broken.append(
                    f"{sample}: {result.check} lists {uncovered} not covered, fields it does not judge"
                )
            if missing := (judges - shown) - uncovered:
                broken.append(f"{sample}: {result.check} does not say it did not cover {sorted(missing)}")
            if claimed := uncovered & shown:
                broken.append(
                    f"{sample}: {result.check} says it did not cover {sorted(claimed)}, which it shows"
                )
            for field in sorted(uncovered & set(WRONG)):
                for change in WRONG[field](profile):
                    got = evaluate(text, apply_overrides(profile, [change]))
                    if got.verdict is not base.verdict:
                        broken.append(f"{sample}: {field} not covered, yet {change} made it {got.verdict}")
    return broken


def test_the_samples_cover_each_nvidia_smi_tool_and_expectation() -> None:
    tools = {tool for _, tool, _, _ in PASSING_SAMPLES}
    assert tools == set(SMI_TOOLS), set(SMI_TOOLS) - tools
    fields = {field for _, tool, text, _ in PASSING_SAMPLES for field in shows(tool, text)}
    assert fields == set(WRONG), set(WRONG) - fields


def test_a_pass_covers_what_the_output_shows() -> None:
    assert violations() == []


@pytest.mark.parametrize("count", [1, 7, 9])
def test_an_output_showing_another_gpu_count_never_passes(count: int) -> None:
    for sample, tool, text, overrides in PASSING_SAMPLES:
        if "gpu.count" not in shows(tool, text):
            continue
        profile = base_profile(sample, overrides)
        if count == profile.gpu.count:
            continue
        got = evaluate_text(text, apply_overrides(profile, [f"gpu.count={count}"]))
        assert got.verdict not in PASSING, (sample, count, got.reason)


def test_the_property_fails_on_a_check_that_ignores_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proof that the property can fail: an nvlink check that no longer judges GPU names breaks it."""
    import burnin.checks.gpu as gpu

    monkeypatch.setattr(gpu, "model_findings", lambda gpus, want: [])
    broken = violations()
    assert any("shows gpu.model, yet passes" in line and "nvlink" in line for line in broken), broken


def test_the_property_fails_on_a_check_that_hides_what_it_did_not_cover() -> None:
    def evaluate(text: str, profile: Profile) -> Evaluation:
        got = evaluate_text(text, profile)
        results = tuple(
            type(r)(
                r.check,
                r.verdict,
                {k: v for k, v in r.metrics.items() if k != "not_covered"},
                r.findings,
                r.reason,
            )
            for r in got.results
        )
        return Evaluation(got.recognition, got.checks, results, got.verdict, got.reason)

    broken = violations(evaluate=evaluate)
    assert any("does not say it did not cover" in line for line in broken), broken


def test_every_check_reading_nvidia_smi_is_held() -> None:
    readers = {name for tool in SMI_TOOLS for name in REGISTRY.readers(tool)}
    held = {
        r.check
        for sample, _, text, overrides in PASSING_SAMPLES
        for r in _evaluate(text, base_profile(sample, overrides)).results
    }
    assert readers <= held | {"gpu_fabric_state"}, readers - held  # applies only with NVSwitch fabric samples
    assert CommandOutput  # the checks are judged through burnin evaluate, as an operator hands them in


def test_consumer_cards_fail_on_the_model_without_a_final_newline() -> None:
    """Eight RTX 4090s on the H100 profile: the checks judge the names whether or not the capture
    kept its last newline (burnin.checks.base decides what a missing newline means)."""
    from tests.unit.burnin.parsers._samples import load

    checks = judging_checks()
    profile = shipped()
    listed = load("nvidia_smi_L_8xrtx4090_DERIVED.txt").rstrip("\n")
    query = load("nvidia_smi_q_8xh100_535_183.txt").replace(
        "NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"
    )
    for check, text in (("container_gpu", listed), ("gpu_inventory", query.rstrip("\n"))):
        result = checks[check].evaluate(CommandOutput(text), profile)
        assert result.verdict is Verdict.FAIL, (check, result.reason)
        assert {f.action.value for f in result.findings} == {"RMA"}
        assert "'NVIDIA GeForce RTX 4090'" in result.findings[0].message
