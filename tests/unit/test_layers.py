"""The layer rules (docs/architecture.md) on the real tree, and proof on small fake trees that
the checker (tests/unit/layers_check.py) catches what it claims to and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.layers_check import LAB_IMPORT_ALLOWLIST, MAX_LINES, LayerReport, check_layers, layer_of

REPO = Path(__file__).resolve().parents[2]


def describe(report: LayerReport) -> str:
    """What a developer needs to fix each finding: the chain, and the file:line of each import."""
    parts: list[str] = []
    if report.cycles:
        parts.append(f"{len(report.cycles)} import cycle(s); break one import of each chain:")
        for number, cycle in enumerate(report.cycles, 1):
            parts += [
                f"  [{number}] " + line if i == 0 else "      " + line
                for i, line in enumerate(str(cycle).splitlines())
            ]
    listed = [
        (
            report.lab_imports,
            "product import(s) of bringup.lab (product code must not know the lab; only the CLI's "
            "registration of `bringup lab` is allowed)",
        ),
        (
            report.upward_imports,
            "bringup import(s) of burnin (burnin builds on bringup, not the other way round; move the "
            "shared piece down into bringup)",
        ),
        (
            report.onnode_imports,
            "import(s) of the project by an on-node program (burnin/onnode/ files run alone on the node, "
            "with the standard library only)",
        ),
        (
            report.layer_breaches,
            "import(s) up the layers (a module imports its own layer and those below: move the shared "
            "piece down, or pass a function in; the layers are LAYERS in tests/unit/layers_check.py)",
        ),
        (
            report.unplaced,
            "module(s) in no layer (add the module or its package to LAYERS in tests/unit/layers_check.py)",
        ),
        (report.oversized, f"module(s) over {MAX_LINES} lines (split them by job)"),
        (
            report.unused_allowances,
            "allowlist entries that match nothing (remove them from tests/unit/layers_check.py)",
        ),
    ]
    for items, what in listed:
        if items:
            parts.append(f"{len(items)} {what}:")
            parts += [f"  {item}" for item in items]
    return "\n".join(parts)


def test_repository_keeps_its_layers() -> None:
    report = check_layers(REPO)
    if not report.ok:
        pytest.fail("layer rules broken (docs/architecture.md):\n" + describe(report), pytrace=False)


# --------------------------------------------------------------------------------------------
# fake trees
# --------------------------------------------------------------------------------------------


def make_tree(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (path -> source) under root, adding empty package __init__.py files."""
    for rel, text in files.items():
        path = root / rel
        for parent in Path(rel).parents:
            if parent != Path(".") and not (root / parent / "__init__.py").exists():
                (root / parent).mkdir(parents=True, exist_ok=True)
                (root / parent / "__init__.py").write_text("")
        path.write_text(text)
    return root


def check_fake(root: Path, **kwargs) -> LayerReport:
    """The checker on a fake tree, without the real tree's size allowlist (it would be stale)."""
    kwargs.setdefault("size_allowlist", {})
    kwargs.setdefault("upward_allowlist", ())
    kwargs.setdefault("layers", FAKE_LAYERS)
    return check_layers(root, **kwargs)


def chains(report: LayerReport) -> list[str]:
    return [" -> ".join(chain) for cycle in report.cycles for chain in cycle.chains]


def test_a_cycle_hidden_in_a_function_is_found(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "bringup/a.py": "import bringup.b\n",
            "bringup/b.py": "def f():\n    from bringup.a import thing\n    return thing\n",
        },
    )
    report = check_fake(tmp_path)
    assert chains(report) == ["bringup.a -> bringup.b -> bringup.a"]
    text = describe(report)
    assert "bringup/b.py:2, in function f()" in text
    assert "bringup/a.py:1, module level" in text


def test_a_cycle_hidden_under_type_checking_is_found(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "burnin/runner.py": "from burnin.group import Group\n",
            "burnin/group.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from burnin.runner import Runner\n"
                "class Group:\n"
                "    runner: 'Runner'\n"
            ),
        },
    )
    report = check_fake(tmp_path)
    assert chains(report) == ["burnin.group -> burnin.runner -> burnin.group"]
    assert "burnin/group.py:3, under TYPE_CHECKING" in describe(report)


def test_typing_dot_type_checking_relative_and_dynamic_imports_count(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "bringup/x/a.py": "from . import b\n",
            "bringup/x/b.py": "import typing\nif typing.TYPE_CHECKING:\n    from .c import C\n",
            "bringup/x/c.py": "import importlib\nA = importlib.import_module('bringup.x.a')\n",
        },
    )
    report = check_fake(tmp_path)
    assert chains(report) == ["bringup.x.a -> bringup.x.b -> bringup.x.c -> bringup.x.a"]


def test_every_module_of_a_tangle_is_shown(tmp_path: Path) -> None:
    # two cycles sharing bringup.hub: one strongly connected set, shown as two chains
    make_tree(
        tmp_path,
        {
            "bringup/hub.py": "import bringup.left\nimport bringup.right\n",
            "bringup/left.py": "import bringup.hub\n",
            "bringup/right.py": "def f():\n    import bringup.hub\n",
            "bringup/alone.py": "import bringup.hub\n",
        },
    )
    report = check_fake(tmp_path)
    assert len(report.cycles) == 1
    assert report.cycles[0].modules == ("bringup.hub", "bringup.left", "bringup.right")
    assert chains(report) == [
        "bringup.hub -> bringup.left -> bringup.hub",
        "bringup.right -> bringup.hub -> bringup.right",
    ]


def test_a_submodule_taking_a_name_from_its_package_init_that_imports_it_is_a_cycle(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "burnin/parsers/__init__.py": "class ParseError(Exception): ...\nfrom burnin.parsers._common import x\n",
            "burnin/parsers/_common.py": "from burnin.parsers import ParseError\nx = 1\n",
        },
    )
    assert chains(check_fake(tmp_path)) == ["burnin.parsers -> burnin.parsers._common -> burnin.parsers"]


def test_a_module_importing_itself_is_a_cycle(tmp_path: Path) -> None:
    make_tree(tmp_path, {"bringup/a.py": "def f():\n    import bringup.a\n"})
    assert chains(check_fake(tmp_path)) == ["bringup.a -> bringup.a"]


def test_package_reexports_and_sibling_imports_are_not_cycles(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "bringup/fleet/__init__.py": (
                "from bringup.fleet.lifecycle import State\nfrom bringup.fleet.store import Store\n"
            ),
            "bringup/fleet/lifecycle.py": "import enum\nclass State(enum.Enum): ...\n",
            "bringup/fleet/store.py": (
                "from bringup.fleet.lifecycle import State\n"
                "from bringup.fleet import lifecycle\n"
                "from . import lifecycle as lc\n"
                "import bringup.fleet.lifecycle\n"
                "class Store: ...\n"
            ),
            "burnin/golden/rules.py": "from bringup.fleet import Store\nimport os.path\nimport yaml\n",
        },
    )
    report = check_fake(tmp_path)
    assert (report.cycles, report.lab_imports, report.oversized) == ([], [], []), describe(report)


def test_product_imports_of_the_lab_are_found(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "bringup/lab/faults.py": "",
            "bringup/lab/network.py": "",
            "bringup/lab/cli.py": "",
            "bringup/clikit.py": "from bringup.lab.network import LabError\nimport bringup.lab.cli\n",
            "bringup/provision/ramdisk.py": "def f():\n    from bringup.lab import network\n",
            "burnin/checks/gpu.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bringup.lab.faults import Spec\n"
            ),
            "burnin/stages/run.py": "from bringup import lab\n",
            "bringup/cli.py": "from bringup.lab.faults import load\n",
        },
    )
    found = sorted((imp.importer, imp.imported, imp.line) for imp in check_fake(tmp_path).lab_imports)
    assert found == [
        ("bringup.cli", "bringup.lab.faults", 1),  # the CLI may register the lab commands, nothing else
        ("bringup.clikit", "bringup.lab.cli", 2),  # "bringup.cli" is a name prefix, not a string prefix
        ("bringup.clikit", "bringup.lab.network", 1),
        ("bringup.provision.ramdisk", "bringup.lab.network", 2),
        ("burnin.checks.gpu", "bringup.lab.faults", 3),
        ("burnin.stages.run", "bringup.lab", 1),
    ]


@pytest.mark.parametrize("cli", ["bringup/cli.py", "bringup/cli/__init__.py", "bringup/cli/lab.py"])
def test_the_cli_registering_the_lab_commands_is_allowed_before_and_after_the_move(
    tmp_path: Path, cli: str
) -> None:
    make_tree(
        tmp_path,
        {
            "bringup/lab/cli.py": "",
            cli: "def _register_lab(main):\n    from bringup.lab.cli import lab\n    main.add_command(lab)\n",
        },
    )
    report = check_fake(tmp_path)
    assert report.lab_imports == []
    assert report.ok, describe(report)


def test_the_lab_may_import_product_code(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "bringup/lab/cli.py": "from bringup.fleet import store\nfrom bringup.lab import rack\n",
            "bringup/lab/rack.py": "import bringup.ssh.fanout\nimport burnin.parsers\n",
            "bringup/fleet/store.py": "",
            "bringup/ssh/fanout.py": "",
            "burnin/parsers/__init__.py": "",
            "bringup/cli.py": "from bringup.lab.cli import lab\n",
        },
    )
    report = check_fake(tmp_path)
    assert report.ok, describe(report)


def test_modules_over_the_line_limit_are_found(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "bringup/big.py": "x = 1\n" * (MAX_LINES + 1),
            "bringup/full.py": "x = 1\n" * MAX_LINES,
            "burnin/parsers/data_like.py": "x = 1\n" * 900,
        },
    )
    report = check_fake(tmp_path, size_allowlist={"burnin.parsers.data_like": "a table of codes"})
    assert [(o.module, o.path, o.lines) for o in report.oversized] == [("bringup.big", "bringup/big.py", 601)]
    assert f"bringup.big (bringup/big.py): {MAX_LINES + 1} lines" in describe(report)


def test_stale_allowlist_entries_are_reported(tmp_path: Path) -> None:
    make_tree(tmp_path, {"bringup/small.py": "x = 1\n", "bringup/lab/cli.py": ""})
    report = check_fake(tmp_path, size_allowlist={"bringup.small": "was big once", "bringup.gone": "moved"})
    assert report.unused_allowances == [
        f"LAB_IMPORT_ALLOWLIST {LAB_IMPORT_ALLOWLIST[0][0]} -> {LAB_IMPORT_ALLOWLIST[0][1]}",
        f"SIZE_ALLOWLIST bringup.gone (missing or not over {MAX_LINES} lines)",
        f"SIZE_ALLOWLIST bringup.small (missing or not over {MAX_LINES} lines)",
    ]
    assert not report.ok


def test_bringup_importing_burnin_is_found_and_the_lab_may(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "burnin/result.py": "VERDICTS = ()\n",
            "burnin/golden/rules.py": "def pick():\n    from bringup.fleet import store\n",
            "bringup/fleet/store.py": "from burnin.result import VERDICTS\n",
            "bringup/fleet/select.py": "def f():\n    import burnin.golden.rules\n",
            "bringup/lab/demo.py": "import burnin.golden.rules\n",
        },
    )
    found = sorted((i.importer, i.imported) for i in check_fake(tmp_path).upward_imports)
    assert found == [
        ("bringup.fleet.select", "burnin.golden.rules"),
        ("bringup.fleet.store", "burnin.result"),
    ]
    allowed = check_fake(tmp_path, upward_allowlist=(("bringup.fleet.store", "burnin.result"),))
    assert [(i.importer, i.imported) for i in allowed.upward_imports] == [
        ("bringup.fleet.select", "burnin.golden.rules")
    ]


def test_an_on_node_program_importing_the_project_is_found(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        {
            "burnin/result.py": "X = 1\n",
            "burnin/onnode/__init__.py": "from pathlib import Path\n",
            "burnin/onnode/stress.py": "import json\nfrom burnin.result import X\n",
            "burnin/onnode/collect.py": "import os\n",
        },
    )
    found = [(i.importer, i.imported) for i in check_fake(tmp_path).onnode_imports]
    assert found == [("burnin.onnode.stress", "burnin.result")]


# --------------------------------------------------------------------------------------------
# the layer order
# --------------------------------------------------------------------------------------------

# Every fake tree's modules in one layer unless a test says otherwise: the other rules' tests
# are not about the order.
FAKE_LAYERS = ((1, "all", ("bringup", "burnin")),)
ORDERED = (
    (1, "pure", ("burnin.checks", "burnin.parsers", "bringup.core")),
    (2, "store", ("bringup.fleet",)),
    (4, "orchestration", ("burnin.stages", "burnin.stages.cut")),
    (1, "pure, inside an orchestration package", ("burnin.stages.plan",)),
)


def test_an_import_up_the_layers_is_found(tmp_path: Path) -> None:
    """The upward import that once passed every test: a check (layer 1) importing a stage."""
    root = make_tree(
        tmp_path,
        {
            "burnin/checks/nccl_replay.py": "from burnin.stages.cut import mark\n",
            "burnin/stages/cut.py": "from burnin.checks import base\nmark = 1\n",
            "burnin/checks/base.py": "",
            "bringup/core/errors.py": "",
        },
    )
    report = check_fake(root, layers=ORDERED)
    assert [
        (b.imp.importer, b.imp.imported, b.importer_layer, b.imported_layer) for b in report.layer_breaches
    ] == [("burnin.checks.nccl_replay", "burnin.stages.cut", 1, 4)]
    assert "burnin/checks/nccl_replay.py:1" in describe(report)


def test_imports_down_and_within_a_layer_pass(tmp_path: Path) -> None:
    root = make_tree(
        tmp_path,
        {
            "burnin/stages/run.py": "from burnin.checks import base\nfrom bringup.fleet import store\n",
            "bringup/fleet/store.py": "from bringup.core import errors\n",
            "bringup/core/errors.py": "",
            "burnin/checks/base.py": "from burnin.parsers import p\n",
            "burnin/parsers/p.py": "",
        },
    )
    report = check_fake(root, layers=ORDERED)
    assert report.layer_breaches == [] and report.unplaced == []


def test_the_longest_prefix_places_a_module(tmp_path: Path) -> None:
    """A pure module inside an orchestration package is held to its own, lower layer."""
    assert layer_of("burnin.stages.plan", ORDERED) == 1
    assert layer_of("burnin.stages.runner", ORDERED) == 4
    assert layer_of("burnin.stagesx", ORDERED) is None  # a prefix is a dotted-name prefix
    root = make_tree(
        tmp_path,
        {"burnin/stages/plan.py": "from burnin.stages import runner\n", "burnin/stages/runner.py": ""},
    )
    report = check_fake(root, layers=ORDERED)
    assert [str(b.imp) for b in report.layer_breaches] == [
        "burnin.stages.plan -> burnin.stages.runner (burnin/stages/plan.py:1, module level)"
    ]


def test_a_module_in_no_layer_is_reported(tmp_path: Path) -> None:
    root = make_tree(tmp_path, {"burnin/newpkg/thing.py": "", "burnin/checks/base.py": ""})
    report = check_fake(root, layers=ORDERED)
    assert "burnin.newpkg.thing" in report.unplaced and not report.ok


def test_the_real_layers_place_every_module_and_name_real_packages() -> None:
    """Each prefix of LAYERS names a module or package of the tree (no stale entry)."""
    from tests.unit.layers_check import LAYERS, find_modules

    modules = find_modules(REPO)
    stale = [p for _, _, prefixes in LAYERS for p in prefixes if p not in modules]
    assert stale == []
    numbers = [number for number, _, _ in LAYERS]
    assert numbers == sorted(numbers) == list(range(1, len(numbers) + 1))
