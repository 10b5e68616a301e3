"""The check registry (burnin/checks/registry.py) and the declarations every check makes on its
class (burnin/checks/base.py: stages, service, reads, judges).

Each property is a function that lists what is wrong with a set of checks; the real registry
must give none, and a bogus check in a throwaway registry shows that each property can fail.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

import pytest
from pydantic import BaseModel

from bringup.profiles.load import Profile, load_profile
from bringup.profiles.model import Profile as ProfileModel
from burnin.checks import ALL_CHECKS, EVIDENCE_CHECKS, REGISTRY
from burnin.checks.base import Check, CommandOutput, Service
from burnin.checks.registry import Registry
from burnin.checks.vendor import fits_vendor
from burnin.evaluate import markers as tool_markers
from burnin.evaluate.recognise import TOOLS
from burnin.result import Result
from burnin.service.health import HEALTH_CHECKS, health_checks
from burnin.stages import ALL_STAGES, GROUP_STAGE_NAMES, stage_checks
from tests.profiles import SHIPPED_DIR, shipped

# Between them, every registered check applies to one of these (zfs_pool wants a pool, the
# fabric manager an NVSwitch, imex_domain a multi-node NVLink domain).
PROFILES = (
    shipped(),
    shipped("host.zfs=true"),
    shipped("gpu.nvswitch=false"),
    shipped("gpu.multi_node_nvlink=true"),
    load_profile("mi300x-8x400g", SHIPPED_DIR)[
        0
    ],  # AMD: the amd-smi and RVS checks (burnin/checks/vendor.py)
)


# ---- the properties: each returns its problems, [] when it holds --------------------------------


def stage_problems(checks: Iterable[Check], stages: Sequence[str] = ALL_STAGES) -> list[str]:
    """Every declared stage is a single-node stage (a group stage runs no registered check)."""
    return [
        f"{c.name}: stage {s!r} is {'a group stage' if s in GROUP_STAGE_NAMES else 'no stage'}"
        for c in checks
        for s in c.stages
        if s not in stages or s in GROUP_STAGE_NAMES
    ]


def tool_problems(
    checks: Iterable[Check], tools: Sequence[tool_markers.Tool] = tool_markers.TOOLS
) -> list[str]:
    """Every tool a check reads has a recogniser in burnin.evaluate.markers (markers or a detector)."""
    recognisable = {t.name for t in tools if t.markers or t.detect is not None}
    return [
        f"{c.name}: no recogniser for {tool!r}"
        for c in checks
        for tool in c.reads
        if tool not in recognisable
    ]


def _field(model: type[BaseModel], dotted: str) -> bool:
    """Whether ``dotted`` names a value (not a section) of the profile model."""
    *sections, leaf = dotted.split(".")
    for name in sections:
        info = model.model_fields.get(name)
        if info is None or not (isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)):
            return False
        model = info.annotation
    info = model.model_fields.get(leaf)
    return info is not None and not (
        isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
    )


def field_problems(checks: Iterable[Check], model: type[BaseModel] = ProfileModel) -> list[str]:
    """Every profile field a check says it judges is a field of the profile model."""
    return [f"{c.name}: no profile field {f!r}" for c in checks for f in c.judges if not _field(model, f)]


def _profile_reads(function: Callable[..., object]) -> set[str]:
    """The ``profile.a.b`` chains a function's own code reads (not those of what it calls)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    chains = set()
    for node in ast.walk(tree):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if parts and isinstance(node, ast.Name) and node.id == "profile":
            chains.add(".".join(reversed(parts)))
    # ast.walk meets profile.a.b's inner profile.a too: keep the whole chains
    return {c for c in chains if not any(other.startswith(c + ".") for other in chains)}


def _model_path(model: type[BaseModel], dotted: str) -> str:
    """The longest start of ``dotted`` that names something in the profile model
    ('hardware.judges_memory' -> 'hardware': a method reads the section)."""
    known = []
    for name in dotted.split("."):
        info = model.model_fields.get(name)
        if info is None:
            break
        known.append(name)
        if not (isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)):
            break
        model = info.annotation
    return ".".join(known)


def undeclared_reads(checks: Iterable[Check], model: type[BaseModel] = ProfileModel) -> list[str]:
    """What a check's own evaluate() and applies() read of the profile is among the fields it
    declares it judges (a whole section read is covered by any field of it)."""
    problems = []
    for c in checks:
        for method in ("applies", "evaluate"):
            function = getattr(type(c), method)
            if function is getattr(Check, method, None):
                continue
            for chain in sorted(_profile_reads(function)):
                path = _model_path(model, chain)
                if path and not any(f == path or f.startswith(path + ".") for f in c.judges):
                    problems.append(f"{c.name}.{method} reads profile.{path}, not in its judges")
    return problems


def reach_problems(checks: Iterable[Check]) -> list[str]:
    """Every check runs somewhere: a stage runs it, or `burnin evaluate` recognises a tool for it."""
    return [
        f"{c.name}: no stage runs it and it reads no tool" for c in checks if not c.stages and not c.reads
    ]


def service_problems(
    checks: Iterable[Check],
    health: Callable[..., list[Check]] = health_checks,
    profiles: Sequence[Profile] = PROFILES,
) -> list[str]:
    """`burnin health` runs exactly the checks declared for service that apply (the on-request
    ones only when asked), each with a command to run; a service check applies to some profile."""
    problems = []
    for profile in profiles:
        plain = {c.name for c in health(profile)}
        asked = {c.name for c in health(profile, container=True)}
        for c in checks:
            applies = c.applies(profile) and fits_vendor(c, profile)  # a profile runs its vendor's checks
            want_plain = applies and c.service is Service.ALWAYS
            want_asked = applies and c.service in (Service.ALWAYS, Service.ON_REQUEST)
            if (c.name in plain) != want_plain or (c.name in asked) != want_asked:
                problems.append(
                    f"{c.name} ({c.service.value}) on {profile.name}: run by burnin health "
                    f"{c.name in plain}, with --container {c.name in asked}"
                )
            if want_asked and c.command(profile) is None:
                problems.append(f"{c.name}: declared for service but has no command to run")
    for c in checks:
        if c.service is not Service.NEVER and not any(c.applies(p) and fits_vendor(c, p) for p in profiles):
            problems.append(f"{c.name}: declared for service, applies to none of the profiles tried")
    return problems


def stage_run_problems(
    checks: Iterable[Check],
    run: Callable[[str, Profile], list[Check]] = stage_checks,
    profiles: Sequence[Profile] = PROFILES,
) -> list[str]:
    """A stage runs exactly the checks declaring it that apply to the profile and read its GPU
    vendor's tools, or no vendor's (burnin/checks/vendor.py)."""
    checks = list(checks)
    problems = []
    for profile in profiles:
        for stage in ALL_STAGES:
            got = {c.name for c in run(stage, profile)}
            want = {
                c.name for c in checks if stage in c.stages and c.applies(profile) and fits_vendor(c, profile)
            }
            if got != want:
                problems.append(f"{stage} on {profile.name}: runs {sorted(got)}, declared {sorted(want)}")
    return problems


def reader_problems(checks: Iterable[Check], tools: Sequence[tool_markers.Tool] = TOOLS) -> list[str]:
    """`burnin evaluate` hands a tool's output to exactly the checks that declare they read it."""
    checks = list(checks)
    by_tool = {t.name: set(t.checks) for t in tools}
    return [
        f"{tool}: judged by {sorted(by_tool.get(tool, set()))}, read by {sorted(readers)}"
        for tool in sorted({*by_tool, *(r for c in checks for r in c.reads)})
        if by_tool.get(tool, set()) != (readers := {c.name for c in checks if tool in c.reads})
    ]


def unjudged_tools(
    checks: Iterable[Check], tools: Sequence[tool_markers.Tool] = tool_markers.TOOLS
) -> list[str]:
    """A tool no check reads says what to give instead: the answer is never a bare 'no check'."""
    read = {tool for c in checks for tool in c.reads}
    return [
        f"{t.name}: no check reads it and it says nothing instead"
        for t in tools
        if t.name not in read and not t.instead
    ]


def unregistered(classes: Iterable[type[Check]], registry: Registry = REGISTRY) -> list[str]:
    """Every concrete check class is registered (@register), or no stage would ever see it."""
    registered = {type(c) for c in registry}
    return [
        f"{cls.__module__}.{cls.__qualname__} is not registered"
        for cls in classes
        if not inspect.isabstract(cls) and cls not in registered
    ]


def _product_check_classes() -> list[type[Check]]:
    seen: list[type[Check]] = []
    todo = list(Check.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("burnin.checks.") and cls not in seen:
            seen.append(cls)
    return seen


# ---- the registered checks hold every property ------------------------------------------------


def test_every_declared_stage_is_a_single_node_stage() -> None:
    assert stage_problems(REGISTRY) == []


def test_every_tool_a_check_reads_has_a_recogniser() -> None:
    assert tool_problems(REGISTRY) == []


def test_every_judged_field_is_in_the_profile_model() -> None:
    assert field_problems(REGISTRY) == []


def test_what_a_check_reads_of_the_profile_it_declares_it_judges() -> None:
    assert undeclared_reads(REGISTRY) == []


def test_every_check_runs_somewhere() -> None:
    assert reach_problems(REGISTRY) == []


def test_burnin_health_runs_exactly_the_checks_declared_for_service() -> None:
    assert service_problems(REGISTRY) == []
    assert tuple(c.name for c in REGISTRY if c.service is Service.ALWAYS) == HEALTH_CHECKS


def test_each_stage_runs_exactly_the_checks_that_declare_it() -> None:
    assert stage_run_problems(REGISTRY) == []


def test_evaluate_hands_each_tool_to_the_checks_that_read_it() -> None:
    assert reader_problems(REGISTRY) == []


def test_every_tool_is_read_by_a_check_or_says_what_to_give_instead() -> None:
    assert unjudged_tools(REGISTRY) == []


def test_every_check_class_is_registered() -> None:
    classes = _product_check_classes()
    assert len(classes) > len(REGISTRY) / 2  # the walk found the product's classes
    assert unregistered(classes) == []


def test_the_public_tables_are_the_registry_split_by_stage() -> None:
    """ALL_CHECKS: the checks a stage runs; EVIDENCE_CHECKS: the rest; together every check once."""
    assert [*ALL_CHECKS, *EVIDENCE_CHECKS] == [c.name for c in REGISTRY if c.stages] + [
        c.name for c in REGISTRY if not c.stages
    ]
    assert len(REGISTRY) == len(ALL_CHECKS) + len(EVIDENCE_CHECKS)
    assert all(c.stages for c in ALL_CHECKS.values()) and not any(c.stages for c in EVIDENCE_CHECKS.values())
    assert all(c.stage == c.stages[0] for c in ALL_CHECKS.values())
    assert all(c.stage == "" for c in EVIDENCE_CHECKS.values())


def test_the_container_check_runs_in_service_only_on_request() -> None:
    """It starts a container on every GPU and may pull an image: never on its own."""
    container = REGISTRY.get("container_gpu")
    assert container is not None and container.service is Service.ON_REQUEST
    assert "container_gpu" not in HEALTH_CHECKS


# ---- each property fails on a bogus check ------------------------------------------------------


class _Bogus(Check):
    """A check built per test, in a throwaway registry: the real one never sees it."""

    name = "bogus"
    description = "a check with wrong declarations"
    stages: ClassVar[tuple[str, ...]] = ("preflight",)

    def command(self, profile: Profile) -> str:
        return "true"

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        return Result.judged(self.name)


def _bogus(**declarations: object) -> Registry:
    """A registry of one check, 'bogus', with these declarations."""
    registry = Registry()
    registry.register(type("Bogus", (_Bogus,), dict(declarations)))
    return registry


def _real_and_bogus(**declarations: object) -> Registry:
    """Every real check (registered anew) and 'bogus': only the bogus one can be wrong."""
    registry = Registry()
    for check in REGISTRY:
        registry.register(type(check))
    registry.register(type("Bogus", (_Bogus,), dict(declarations)))
    return registry


def test_a_stage_that_does_not_exist_is_reported() -> None:
    assert stage_problems(_bogus(stages=("preflihgt",))) == ["bogus: stage 'preflihgt' is no stage"]
    assert stage_problems(_bogus(stages=("ib",))) == ["bogus: stage 'ib' is a group stage"]


def test_a_tool_without_a_recogniser_is_reported() -> None:
    assert tool_problems(_bogus(reads=("nvidia-smi -q", "nvidia-smi --fabric"))) == [
        "bogus: no recogniser for 'nvidia-smi --fabric'"
    ]
    markerless = (*tool_markers.TOOLS, tool_markers.Tool("nvidia-smi --fabric"))
    assert tool_problems(_bogus(reads=("nvidia-smi --fabric",)), markerless) == [
        "bogus: no recogniser for 'nvidia-smi --fabric'"
    ]


def test_a_field_not_in_the_profile_model_is_reported() -> None:
    fields = ("gpu.count", "gpu.fabric_state", "gpu", "pcie.gpu.gen", "pcie.gpu.speed", "nope.count")
    assert field_problems(_bogus(judges=fields)) == [
        "bogus: no profile field 'gpu.fabric_state'",
        "bogus: no profile field 'gpu'",  # a section, not a value
        "bogus: no profile field 'pcie.gpu.speed'",
        "bogus: no profile field 'nope.count'",
    ]


class _ReadsTheModel(_Bogus):
    def applies(self, profile: Profile) -> bool:
        return profile.hardware.judges_cpu()

    def evaluate(self, output: CommandOutput, profile: Profile) -> Result:
        wanted = profile.gpu.model
        return Result.judged(self.name, metrics={"model": wanted, "links": profile.pcie.gpu})


def test_a_profile_read_not_declared_is_reported() -> None:
    def registry(judges: tuple[str, ...]) -> Registry:
        r = Registry()
        r.register(type("Bogus", (_ReadsTheModel,), {"judges": judges}))
        return r

    assert undeclared_reads(registry(("gpu.count",))) == [
        "bogus.applies reads profile.hardware, not in its judges",
        "bogus.evaluate reads profile.gpu.model, not in its judges",
        "bogus.evaluate reads profile.pcie.gpu, not in its judges",
    ]
    assert undeclared_reads(registry(("gpu.model", "pcie.gpu.gen", "hardware.cpu_model"))) == []


def test_a_check_nothing_runs_is_reported() -> None:
    assert reach_problems(_bogus(stages=())) == ["bogus: no stage runs it and it reads no tool"]
    assert reach_problems(_bogus(stages=(), reads=("lspci -vv",))) == []


def _runs_all(registry: Registry) -> Callable[..., list[Check]]:
    """A stand-in for health_checks that runs every check of ``registry``, asked or not."""

    def health(profile: Profile, container: bool = False) -> list[Check]:
        return list(registry)

    return health


def test_a_service_check_burnin_health_does_not_run_is_reported() -> None:
    """Declared for service, but health_checks (the real one) does not know it."""
    profiles = (PROFILES[0], PROFILES[3], PROFILES[4])  # PROFILES[4]: AMD, where the amd-smi checks apply
    problems = service_problems(_real_and_bogus(service=Service.ALWAYS), profiles=profiles)
    assert problems == [
        *["bogus (always) on h100-sxm-8x400g: run by burnin health False, with --container False"] * 2,
        "bogus (always) on mi300x-8x400g: run by burnin health False, with --container False",
    ]


def test_a_check_burnin_health_runs_undeclared_or_unasked_is_reported() -> None:
    asked = _bogus(service=Service.ON_REQUEST)
    assert service_problems(asked, _runs_all(asked), PROFILES[:1]) == [
        "bogus (on request) on h100-sxm-8x400g: run by burnin health True, with --container True"
    ]
    never = _bogus(service=Service.NEVER)
    assert service_problems(never, _runs_all(never), PROFILES[:1]) == [
        "bogus (never) on h100-sxm-8x400g: run by burnin health True, with --container True"
    ]


def test_a_service_check_without_a_command_or_a_profile_is_reported() -> None:
    commandless = _bogus(service=Service.ALWAYS, command=lambda self, profile: None)
    assert service_problems(commandless, _runs_all(commandless), PROFILES[:1]) == [
        "bogus: declared for service but has no command to run"
    ]
    nowhere = _bogus(service=Service.ALWAYS, applies=lambda self, profile: False)
    assert service_problems(nowhere, profiles=PROFILES[:1]) == [
        "bogus: declared for service, applies to none of the profiles tried"
    ]


def test_a_stage_that_does_not_run_a_check_declaring_it_is_reported() -> None:
    """stage_checks (the real one) does not know the bogus check that declares the gpu stage."""
    assert stage_run_problems(_real_and_bogus(stages=("gpu",)), profiles=PROFILES[:1]) == [
        "gpu on h100-sxm-8x400g: runs ['copy_bandwidth', 'dcgm_diag', 'gpu_stress', 'nccl_local'], "
        "declared ['bogus', 'copy_bandwidth', 'dcgm_diag', 'gpu_stress', 'nccl_local']"
    ]


def test_a_tool_judged_by_a_check_that_does_not_read_it_is_reported() -> None:
    tools = (tool_markers.Tool("ibstat", checks=("ib_ports", "bogus")),)
    assert reader_problems(_bogus(reads=()), tools) == ["ibstat: judged by ['bogus', 'ib_ports'], read by []"]
    assert reader_problems(_bogus(reads=("ibstat",)), ()) == ["ibstat: judged by [], read by ['bogus']"]


def test_a_tool_nobody_reads_and_without_advice_is_reported() -> None:
    tools = (tool_markers.Tool("ibstat"), tool_markers.Tool("ibstatus", instead="give ibstat"))
    assert unjudged_tools(_bogus(reads=()), tools) == [
        "ibstat: no check reads it and it says nothing instead"
    ]
    assert unjudged_tools(_bogus(reads=("ibstat",)), tools) == []


def test_a_check_class_not_registered_is_reported() -> None:
    registry = _bogus()
    forgotten = type("Forgotten", (_Bogus,), {"name": "forgotten", "__module__": __name__})
    abstract = type("Shared", (Check,), {"name": "shared", "description": ""})  # a base, never run
    assert unregistered([forgotten, type(registry.get("bogus")), abstract], registry) == [
        f"{__name__}.Forgotten is not registered"
    ]


# ---- the registry itself -----------------------------------------------------------------------


def test_registration_keeps_the_order_and_refuses_a_name_twice() -> None:
    registry = Registry()
    first = registry.register(type("A", (_Bogus,), {"name": "a", "reads": ("ibstat",)}))
    registry.register(type("B", (_Bogus,), {"name": "b", "stages": (), "reads": ("ibstat", "perfquery")}))
    assert first.__name__ == "A"  # the decorator gives the class back
    assert [c.name for c in registry] == ["a", "b"] and len(registry) == 2
    assert registry.readers("ibstat") == ("a", "b") and registry.readers("perfquery") == ("b",)
    assert list(registry.stage_run()) == ["a"] and list(registry.evaluate_only()) == ["b"]
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(type("A2", (_Bogus,), {"name": "a"}))


@pytest.mark.parametrize(
    ("declarations", "error"),
    [
        ({"stages": "preflight"}, "stages is a tuple of names"),  # a string, not a one-name tuple
        ({"reads": ("ibstat", "")}, "reads is a tuple of names"),
        ({"judges": ["gpu.count"]}, "judges is a tuple of names"),
        ({"service": True}, "service is a Service"),
    ],
)
def test_a_malformed_declaration_fails_at_registration(declarations: dict, error: str) -> None:
    with pytest.raises(TypeError, match=error):
        Registry().register(type("Bad", (_Bogus,), declarations))


def test_a_check_without_a_name_or_an_abstract_one_is_refused() -> None:
    nameless = type("Nameless", (_Bogus,), {"name": ""})
    with pytest.raises(TypeError, match="has a name"):
        Registry().register(nameless)
    abstract = type("Abstract", (Check,), {"name": "abstract", "description": ""})
    with pytest.raises(TypeError, match="abstract"):
        Registry().register(abstract)


def test_a_test_stand_in_check_is_not_registered() -> None:
    """Subclassing Check registers nothing: only @register does (a stand-in must not run in a stage)."""
    before = [c.name for c in REGISTRY]
    type("StandIn", (_Bogus,), {"name": "stand_in"})
    assert [c.name for c in REGISTRY] == before and REGISTRY.get("stand_in") is None
