"""The group stages as objects (burnin.stages.group): every registered one implements the whole
interface and agrees with the stage list and the runner's entry points; the modules above the
stages ask the stage objects and never name a stage (a scan of their source, shown to catch a
stage named in a snippet); one ``replay`` signature judges both stages' saved evidence again."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Collection
from pathlib import Path

import pytest

from bringup.profiles.load import apply_overrides
from burnin.history.lemons import HARDWARE_PARTS
from burnin.report.html import CHARTS
from burnin.result import Result, Verdict
from burnin.stages import GROUP_STAGE_NAMES, group_stages
from burnin.stages.group import GROUP_STAGES, GroupStage, applies, group_stage, owner
from burnin.stages.slurm_launch import SlurmStageSettings
from tests.paths import REPO
from tests.unit.burnin.checks.test_ib_replay import LOW, run_stage
from tests.unit.burnin.checks.test_ib_replay import NODES as IB_NODES
from tests.unit.burnin.stages.test_nccl import _jobs, _profile, fake  # noqa: F401 - the fixture

# The modules above the stages that must ask the stage objects (docs/architecture.md, layer 4).
GUARDED = (
    "burnin/run/rejudge.py",
    "burnin/golden/rules.py",
    "burnin/run/session.py",
    "burnin/report",
    "burnin/history",
)
INTERFACE = ("applies", "run", "slurm_settings", "owns", "replay", "report_floor")


# ---- every registered stage implements the interface ---------------------------------------------


@pytest.mark.parametrize("stage", GROUP_STAGES, ids=lambda s: s.name)
def test_every_group_stage_implements_the_interface(stage, tmp_path):
    assert isinstance(stage, GroupStage) and not inspect.isabstract(type(stage))
    for method in INTERFACE:  # the base's parameters, so every caller can call every stage alike
        mine, base = (inspect.signature(getattr(c, method)).parameters for c in (type(stage), GroupStage))
        assert [(p.name, p.kind) for p in mine.values()] == [(p.name, p.kind) for p in base.values()], method
    assert stage.name in GROUP_STAGE_NAMES and callable(group_stages()[stage.name])
    assert stage.check and stage.owns(stage.name, stage.check) and owner(stage.name, stage.check) is stage
    assert not stage.owns(stage.name, stage.check + "_other") and not stage.owns("preflight", stage.check)
    assert stage.component is None or stage.component in HARDWARE_PARTS
    assert stage.report is None or (stage.report.chart in CHARTS and stage.report.title)
    profile = _profile()
    assert isinstance(stage.applies(profile), bool) and applies(stage.name, profile) is stage.applies(profile)
    floor = stage.report_floor(profile)
    assert floor is None or floor > 0
    slurm = SlurmStageSettings(str(tmp_path), str(tmp_path))
    assert isinstance(stage.slurm_settings(slurm, 7, None), dict)


def test_the_registry_is_the_stage_list_s_group_stages_in_order():
    assert tuple(s.name for s in GROUP_STAGES) == GROUP_STAGE_NAMES
    assert set(group_stages()) == set(GROUP_STAGE_NAMES)  # the entry points the runner calls
    assert all(group_stage(s.name) is s for s in GROUP_STAGES) and group_stage("preflight") is None
    assert applies("preflight", _profile())  # a single-node stage: its checks decide, not the stage


def test_a_stage_missing_part_of_the_interface_cannot_be_made():
    class NoReplay(GroupStage):
        name, check = "bogus", "bogus_check"

        def applies(self, profile) -> bool:
            return True

    with pytest.raises(TypeError, match="replay"):
        NoReplay()


def test_a_group_stage_that_does_not_apply_is_not_required_by_golden():
    from burnin.golden.rules import required_stages

    no_hca = apply_overrides(_profile(), ["ib.hca_count=0"])
    for profile in (_profile(), no_hca):
        wanted = tuple(
            s for s in required_stages(None) if group_stage(s) is None or group_stage(s).applies(profile)
        )
        assert required_stages(profile) == wanted
    assert any(not s.applies(no_hca) for s in GROUP_STAGES)  # the case above is not vacuous


# ---- nothing above the stages names one -------------------------------------------------------------


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (a docstring may say which stage it is about)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _stage_module(module: str, names: Collection[str]) -> bool:
    """A module of one stage: burnin.stages.<name>[_...] or burnin.checks.<name>[_...]."""
    parts = module.split(".")
    return (
        len(parts) >= 3
        and parts[:2] in (["burnin", "stages"], ["burnin", "checks"])
        and any(parts[2] == n or parts[2].startswith(n + "_") for n in names)
    )


def names_a_stage(source: str, names: Collection[str]) -> list[tuple[int, str]]:
    """(line, what) for each string constant that is a group stage's name (docstrings and
    comments aside) and each import of a stage's own modules."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in docs:
            found.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if _stage_module(a.name, names)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            whole = _stage_module(node.module, names)
            modules = [node.module] if whole else [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, f"from {m}") for m in modules if _stage_module(m, names)]
    return found


def guarded_files() -> list[Path]:
    out = []
    for rel in GUARDED:
        path = REPO / rel
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


def test_no_module_above_the_stages_names_a_group_stage():
    names = [s.name for s in GROUP_STAGES]
    files = guarded_files()
    assert len(files) > 5 and all(f.exists() for f in files)
    found = {
        f"{path.relative_to(REPO)}:{line}": what
        for path in files
        for line, what in names_a_stage(path.read_text(), names)
    }
    assert found == {}, "ask burnin.stages.group's stage objects instead"


@pytest.mark.parametrize(
    "snippet",
    [
        'if row.stage == "{0}" and row.check == CHECK:\n    pass\n',
        'STAGES = ("gpu", "{1}")\n',
        'def f(rows):\n    """Rows."""\n    return [r for r in rows if r.stage != "{0}"]\n',
        "from burnin.stages.{0}_slurm import SETTING\n",
        "from burnin.checks import {1}_replay\n",
        "import burnin.stages.{1}\n",
    ],
)
def test_the_scan_catches_a_stage_named_in_a_snippet(snippet):
    first, last = GROUP_STAGES[0].name, GROUP_STAGES[-1].name
    assert names_a_stage(snippet.format(first, last), [first, last])


def test_the_scan_allows_docstrings_comments_and_other_words():
    first, last = GROUP_STAGES[0].name, GROUP_STAGES[-1].name
    source = (
        f'"""{first}"""\n\n'
        f"def f(stage):\n"
        f'    """{last}"""\n'
        f'    return f"stage {{stage}}", "{first}-heatmap", "{last}_soak"  # the {first} stage\n'
        "from burnin.stages.group import GROUP_STAGES\n"
    )
    assert names_a_stage(source, [first, last]) == []


# ---- one replay signature for both stages -----------------------------------------------------------


def _replays_the_run(
    stage: GroupStage, results: dict[str, tuple[Result, str]], profile, raised, fails: set[str]
) -> None:
    """The stage's saved evidence judged again through ``GroupStage.replay``: with the run's
    profile each node's result as the run had it; with ``raised`` the nodes ``fails`` FAIL; a
    node whose evidence holds no record says why, never passes."""
    nodes = sorted(results)
    evidence = {n: text for n, (_, text) in results.items()}
    again = stage.replay(evidence, dict.fromkeys(nodes, profile))
    assert set(again) == set(nodes)
    for node, (result, _) in results.items():
        assert isinstance(again[node], Result), (node, again[node])
        assert (again[node].verdict, again[node].findings, again[node].metrics) == (
            result.verdict,
            result.findings,
            result.metrics,
        )
    raised_again = stage.replay(evidence, dict.fromkeys(nodes, raised))
    assert {n for n, r in raised_again.items() if r.verdict is Verdict.FAIL} == fails
    broken = stage.replay(
        {**evidence, nodes[-1]: "a result from before records were kept\n"}, dict.fromkeys(nodes, profile)
    )
    assert isinstance(broken[nodes[-1]], str) and f"no {stage.name} record" in broken[nodes[-1]]


def test_one_replay_signature_judges_both_stages_again(monkeypatch, fake):  # noqa: F811
    ib = group_stage("ib")
    results = run_stage(monkeypatch, LOW)
    assert sorted(results) == IB_NODES
    raised = apply_overrides(LOW, ["floors.ib_write_bw_fraction=0.97"])  # 388 Gb/s: node03's port ran 380
    _replays_the_run(ib, results, LOW, raised, {"node03"})

    nccl = group_stage("nccl")
    run, _, _ = fake
    profile = _profile()
    judged = {node: only for node, (only,) in run(_jobs(4, profile)).items()}
    raised = apply_overrides(profile, ["floors.nccl_busbw_multi_node_gbps=400"])  # the runs moved 390
    _replays_the_run(nccl, judged, profile, raised, set(judged))


def test_a_node_without_a_profile_is_not_judged_by_either_stage(monkeypatch, fake):  # noqa: F811
    results = run_stage(monkeypatch, LOW)
    evidence = {n: text for n, (_, text) in results.items()}
    some = dict.fromkeys(IB_NODES[:-1], LOW)
    again = group_stage("ib").replay(evidence, some)
    assert isinstance(again[IB_NODES[-1]], str)
    run, _, _ = fake
    profile = _profile()
    evidence = {node: only[1] for node, (only,) in run(_jobs(2, profile)).items()}
    again = group_stage("nccl").replay(evidence, {"node01": profile})
    assert isinstance(again["node01"], Result) and isinstance(again["node02"], str)
