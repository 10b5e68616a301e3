"""The layer rules of docs/architecture.md, checked on the source text (stdlib only, no imports
of the checked code): no import cycles, no product module importing the lab, no module over
600 lines. Pure functions returning a `LayerReport`; tests/unit/test_layers.py asserts on it.

What counts as an import (module A imports module B):

- ``import a.b.c`` -> ``a.b.c``;
- ``from a.b import c`` -> ``a.b.c`` when that is a module, else ``a.b``;
- relative imports resolved against the importing module (``from . import x`` in ``p/q.py`` is
  ``p.x`` or ``p``, as above);
- ``importlib.import_module("a.b")`` / ``__import__("a.b")`` with a literal name.

Every import counts wherever it sits: at module level, inside a function, under
``if TYPE_CHECKING:``, in a ``try``. Deferring an import does not remove the dependency, and
hiding cycles that way is what these rules exist to stop. Each import is recorded with its line
and where it sits, so a report says which line to change.

The parent packages a dotted name implies are not edges: ``from bringup.fleet.store import X``
is an edge to ``bringup.fleet.store`` only, not to ``bringup.fleet`` (its ``__init__``).
Otherwise every package ``__init__`` that re-exports from its submodules would form a cycle with
each submodule that imports a sibling, which is harmless. A name that resolves to no module of
the checked packages (the standard library, third-party code) is ignored; one inside them that
does not exist resolves to its longest existing prefix.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("bringup", "burnin")
LAB = "bringup.lab"
ONNODE = "burnin.onnode"  # programs sent to nodes as one file each: the standard library only
MAX_LINES = 600

# (importer prefix, imported module): product -> lab imports that are allowed. The importer
# matches by dotted-name prefix: "bringup.cli" is the module bringup.cli and every module under
# the package bringup.cli, so the entry survives moving bringup/cli.py into bringup/cli/.
# The imported module must match exactly. Keep this list short; every entry needs its reason.
LAB_IMPORT_ALLOWLIST: tuple[tuple[str, str], ...] = (
    # The `bringup` CLI registers the `bringup lab` command group; the lab's commands live in
    # the lab and the product CLI is the only place they can be attached to.
    ("bringup.cli", "bringup.lab.cli"),
)

# (importer prefix, imported module): bringup -> burnin imports that are allowed. burnin builds
# on bringup (store, profiles, SSH), never the other way round; the lab, beside both, may import
# either. Matching as for LAB_IMPORT_ALLOWLIST.
UPWARD_IMPORT_ALLOWLIST: tuple[tuple[str, str], ...] = (
    # The store keeps check results and refuses a verdict outside the one vocabulary, which
    # burnin.result defines; it is a leaf module (it imports nothing of either package).
    ("bringup.fleet.store", "burnin.result"),
)

# Modules allowed over MAX_LINES, with the reason. Not for code that has two jobs (split it);
# for a module whose size is one piece of knowledge that splitting would scatter.
SIZE_ALLOWLIST: dict[str, str] = {
    "burnin.parsers.nvidia_smi": (
        "one parser per nvidia-smi output format (-q, nvlink -s, -L, CSV, topo -m, table) and the "
        "format drift between driver versions; splitting scatters the format knowledge"
    ),
    "bringup.profiles.model": (
        "the profile's schema: every key with its type, limits and the public figure its description "
        "cites, one section per class; splitting scatters the one place a profile's keys are read from"
    ),
}


# The layers of docs/architecture.md, bottom to top: (number, name, module prefixes). A module
# is in the layer of its longest matching prefix (a dotted-name prefix, as for the allowlists),
# so a package names its layer once and a module that differs from its package names its own.
# A module imports from its own layer and the layers below; one that matches no prefix is
# reported, so a new package cannot escape the rule. The lab and the on-node programs sit
# beside the layers (their own rules above); the two package roots import nothing.
LAYERS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (
        1,
        "vocabulary and pure judging",
        (
            "bringup.core",  # errors, problems, YAML reading, credential references, output cuts
            "bringup.profiles",
            "bringup.inventory",  # what an operator writes: rack inventories, delivery orders
            "bringup.fleet.lifecycle",
            "bringup.ssh.hostkeys",
            "bringup.configure.outcome",
            "burnin.result",
            "burnin.parsers",
            "burnin.checks",
            "burnin.plan",
            "burnin.evaluate",
            "burnin.fabric",  # the cabling plan, P_Key tables, the fabric seen against the plan
            "burnin.service.health",
            "burnin.service.breaker",
            "burnin.service.nightly_plan",
            "burnin.service.reasons",
            "burnin.service.remediate_ladder",
            "burnin.service.watch_rates",
            "burnin.history.figures",
            "burnin.history.jobs",
            "burnin.history.lemons",
            "burnin.history.node_fail",
            "burnin.history.reliability",
            "burnin.history.signals",
            "burnin.accept.bmc_gpus",
            "burnin.accept.conformance",
            "burnin.accept.conformance_model",
            "burnin.accept.conformance_parts",
            "burnin.accept.decide",
            "burnin.accept.missing_parts",
            "burnin.accept.outcome",
        ),
    ),
    (2, "the store", ("bringup.fleet",)),
    (
        3,
        "I/O edges",
        (
            "bringup.local",  # atomic files, child processes, bounded capture of what they print
            "bringup.ssh",
            "bringup.redfish",
            "bringup.provision.backend",  # the interface the PXE and MAAS backends implement
            "bringup.provision.pxe",
            "bringup.provision.maas",
            "bringup.provision.preinstalled",  # nodes that already run their OS: checked over SSH
            "bringup.configure.runner",
            "burnin.stages.launch",
            "burnin.service.local",
            "burnin.service.nightly_lock",
            "burnin.service.nightly_slurm",
            "burnin.service.slurm",
            "burnin.service.state",
            "burnin.fabric.live",  # ibnetdiscover run here, the saved outputs, the plan's files
            "burnin.fabric.ufm_live",  # the UFM event log, the plan, the ib stage's results (file or store)
        ),
    ),
    (
        4,
        "orchestration (and the renderers the library writes reports with)",
        (
            "bringup.fleet.select",
            "bringup.ssh.hostkey_records",
            "bringup.redfish.rack",
            "bringup.redfish.targets",
            "bringup.provision",
            "bringup.configure",
            "burnin.run",
            "burnin.stages",
            "burnin.golden",
            "burnin.service",
            "burnin.history",
            "burnin.accept",
            "burnin.report",
        ),
    ),
    (5, "commands", ("bringup.cli", "bringup.__main__", "burnin.cli")),
)


@dataclass(frozen=True)
class Import:
    """One import statement's edge: `importer` imports `imported` at `path`:`line`."""

    importer: str
    imported: str
    path: str  # relative to the repo root
    line: int
    where: str  # "module level", "in a function", "under TYPE_CHECKING", ...

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported} ({self.path}:{self.line}, {self.where})"


@dataclass(frozen=True)
class Cycle:
    """A strongly connected set of modules, shown as chains that together cover all of them."""

    modules: tuple[str, ...]
    chains: tuple[tuple[str, ...], ...]  # each closed: first == last
    edges: tuple[Import, ...]  # the imports that make up the chains

    def __str__(self) -> str:
        lines = [f"{len(self.modules)} modules: " + ", ".join(self.modules)]
        lines += ["  " + " -> ".join(chain) for chain in self.chains]
        lines.append("  the imports:")
        lines += [f"    {edge}" for edge in self.edges]
        return "\n".join(lines)


@dataclass(frozen=True)
class LayerBreach:
    """An import from a lower layer of a module in a higher one."""

    imp: Import
    importer_layer: int
    imported_layer: int

    def __str__(self) -> str:
        return f"{self.imp} (layer {self.importer_layer} imports layer {self.imported_layer})"


@dataclass(frozen=True)
class Oversized:
    module: str
    path: str
    lines: int

    def __str__(self) -> str:
        return f"{self.module} ({self.path}): {self.lines} lines"


@dataclass
class LayerReport:
    cycles: list[Cycle] = field(default_factory=list)
    lab_imports: list[Import] = field(default_factory=list)
    upward_imports: list[Import] = field(default_factory=list)  # bringup (not the lab) -> burnin
    onnode_imports: list[Import] = field(default_factory=list)  # burnin.onnode -> the project
    oversized: list[Oversized] = field(default_factory=list)
    layer_breaches: list[LayerBreach] = field(default_factory=list)  # an import up the layers
    unplaced: list[str] = field(default_factory=list)  # modules that no prefix of LAYERS matches
    # allowlist entries that matched nothing (stale: remove them so they cannot hide a new case)
    unused_allowances: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.cycles
            or self.lab_imports
            or self.upward_imports
            or self.onnode_imports
            or self.oversized
            or self.layer_breaches
            or self.unplaced
            or self.unused_allowances
        )


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


# --------------------------------------------------------------------------------------------
# modules and imports
# --------------------------------------------------------------------------------------------


def find_modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Module]:
    """Every .py file under root/<package>, keyed by dotted name (`p/__init__.py` -> `p`)."""
    modules: dict[str, Module] = {}
    for package in packages:
        base = root / package
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(root)
            if "__pycache__" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            modules[".".join(parts)] = Module(".".join(parts), path, is_package)
    return modules


def _resolve(name: str, known: Mapping[str, Module]) -> str | None:
    """The longest prefix of `name` that is a known module, or None."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


class _ImportVisitor(ast.NodeVisitor):
    def __init__(self, module: Module, known: Mapping[str, Module], rel_path: str) -> None:
        self.module = module
        self.known = known
        self.rel_path = rel_path
        self.context: list[str] = []
        self.found: list[Import] = []

    def _where(self) -> str:
        return self.context[-1] if self.context else "module level"

    def _add(self, target: str | None, node: ast.AST) -> None:
        resolved = _resolve(target, self.known) if target else None
        if resolved is not None:
            self.found.append(Import(self.module.name, resolved, self.rel_path, node.lineno, self._where()))

    def _nested(self, label: str, nodes: Iterable[ast.AST]) -> None:
        self.context.append(label)
        for child in nodes:
            self.visit(child)
        self.context.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self._nested(f"in function {node.name}()", node.body)

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        if _is_type_checking(node.test):
            self._nested("under TYPE_CHECKING", node.body)
            for child in node.orelse:
                self.visit(child)
        else:
            for child in node.body + node.orelse:
                self.visit(child)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.module.name.split(".")
            if not self.module.is_package:
                parts.pop()  # the package the module sits in
            if node.level > 1:
                parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, node.module] if node.module else parts)
        else:
            base = node.module or ""
        for alias in node.names:
            submodule = f"{base}.{alias.name}" if base else alias.name
            self._add(submodule if submodule in self.known else base, node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if (
            name in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            self._add(node.args[0].value, node)
        self.generic_visit(node)


def find_imports(root: Path, modules: Mapping[str, Module]) -> list[Import]:
    """Every import edge between the given modules, in file and line order."""
    found: list[Import] = []
    for module in modules.values():
        rel = module.path.relative_to(root).as_posix()
        tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=rel)
        visitor = _ImportVisitor(module, modules, rel)
        visitor.visit(tree)
        found.extend(visitor.found)
    return found


# --------------------------------------------------------------------------------------------
# cycles
# --------------------------------------------------------------------------------------------


def _strongly_connected(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (no recursion limit on long chains)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(sorted(component))
    return result


def _shortest_cycle(start: str, graph: Mapping[str, set[str]], allowed: set[str]) -> list[str]:
    """The shortest closed chain start -> ... -> start staying inside `allowed` (BFS)."""
    parent: dict[str, str] = {}
    queue = [start]
    seen = {start}
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                chain = [node]
                while chain[-1] != start:
                    chain.append(parent[chain[-1]])
                return [*reversed(chain), start]
            if nxt in allowed and nxt not in seen:
                seen.add(nxt)
                parent[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{start} is in a strongly connected set but on no cycle")


def find_cycles(imports: Iterable[Import]) -> list[Cycle]:
    """Each import cycle, as chains covering every module of each strongly connected set."""
    graph: dict[str, set[str]] = defaultdict(set)
    by_edge: dict[tuple[str, str], Import] = {}
    for imp in imports:
        graph[imp.importer].add(imp.imported)
        by_edge.setdefault((imp.importer, imp.imported), imp)
    cycles: list[Cycle] = []
    for component in _strongly_connected(graph):
        members = set(component)
        if len(component) == 1 and component[0] not in graph[component[0]]:
            continue
        chains: list[tuple[str, ...]] = []
        covered: set[str] = set()
        for module in component:
            if module not in covered:
                chain = _shortest_cycle(module, graph, members)
                chains.append(tuple(chain))
                covered.update(chain)
        edges = {by_edge[(a, b)] for chain in chains for a, b in zip(chain, chain[1:], strict=False)}
        cycles.append(
            Cycle(tuple(component), tuple(chains), tuple(sorted(edges, key=lambda e: (e.path, e.line))))
        )
    return cycles


# --------------------------------------------------------------------------------------------
# the rules
# --------------------------------------------------------------------------------------------


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _forbidden(
    imports: Iterable[Import], importers: str, imported: str, allowlist: Iterable[tuple[str, str]]
) -> tuple[list[Import], list[tuple[str, str]]]:
    """Imports from modules under `importers` (outside the lab) of modules under `imported`,
    less the allowlist. Returns (violations, allowlist entries that matched nothing)."""
    allowlist = list(allowlist)
    used: set[tuple[str, str]] = set()
    violations: list[Import] = []
    for imp in imports:
        if _under(imp.importer, LAB) or not _under(imp.importer, importers):
            continue
        if not _under(imp.imported, imported):
            continue
        entry = next((e for e in allowlist if _under(imp.importer, e[0]) and imp.imported == e[1]), None)
        if entry is None:
            violations.append(imp)
        else:
            used.add(entry)
    return violations, [e for e in allowlist if e not in used]


def find_lab_imports(
    imports: Iterable[Import], allowlist: Iterable[tuple[str, str]] = LAB_IMPORT_ALLOWLIST
) -> tuple[list[Import], list[tuple[str, str]]]:
    """Product modules (everything outside bringup.lab) importing bringup.lab or below it."""
    imports = list(imports)
    found = [_forbidden(imports, package, LAB, allowlist) for package in PACKAGES]
    violations = [imp for v, _ in found for imp in v]
    unused = [e for e in allowlist if all(e in u for _, u in found)]
    return violations, unused


def find_upward_imports(
    imports: Iterable[Import], allowlist: Iterable[tuple[str, str]] = UPWARD_IMPORT_ALLOWLIST
) -> tuple[list[Import], list[tuple[str, str]]]:
    """bringup modules (the lab aside) importing burnin, which builds on bringup."""
    return _forbidden(imports, "bringup", "burnin", allowlist)


def find_onnode_imports(imports: Iterable[Import]) -> list[Import]:
    """On-node programs importing anything of the project: the node runs the file alone."""
    imports = list(imports)
    return [imp for package in PACKAGES for imp in _forbidden(imports, ONNODE, package, ())[0]]


def layer_of(module: str, layers: Iterable[tuple[int, str, tuple[str, ...]]] = LAYERS) -> int | None:
    """The layer of the longest prefix in `layers` that `module` is under, or None."""
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for number, _, prefixes in layers:
        for prefix in prefixes:
            if _under(module, prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), number)
    return best[1] if best else None


def _beside_layers(module: str) -> bool:
    return module in PACKAGES or _under(module, LAB) or _under(module, ONNODE)


def find_layer_breaches(
    modules: Iterable[str],
    imports: Iterable[Import],
    layers: Iterable[tuple[int, str, tuple[str, ...]]] = LAYERS,
) -> tuple[list[LayerBreach], list[str]]:
    """Imports up the layers, and the modules no layer holds. Returns (breaches, unplaced)."""
    layers = tuple(layers)
    placed = {m: layer_of(m, layers) for m in modules if not _beside_layers(m)}
    unplaced = sorted(m for m, layer in placed.items() if layer is None)
    breaches: dict[tuple[str, str, str, int], LayerBreach] = {}  # one per import line
    for imp in imports:
        low, high = placed.get(imp.importer), placed.get(imp.imported)
        if low is not None and high is not None and high > low:
            breaches.setdefault((imp.importer, imp.imported, imp.path, imp.line), LayerBreach(imp, low, high))
    return list(breaches.values()), unplaced


def find_oversized(
    root: Path,
    modules: Mapping[str, Module],
    allowlist: Mapping[str, str] = SIZE_ALLOWLIST,
    max_lines: int = MAX_LINES,
) -> tuple[list[Oversized], list[str]]:
    """Modules over max_lines not in the allowlist. Returns (violations, allowlist entries that
    name no module or a module within the limit)."""
    violations: list[Oversized] = []
    needed: set[str] = set()
    for name, module in sorted(modules.items()):
        count = len(module.path.read_text(encoding="utf-8").splitlines())
        if count <= max_lines:
            continue
        if name in allowlist:
            needed.add(name)
        else:
            violations.append(Oversized(name, module.path.relative_to(root).as_posix(), count))
    return violations, sorted(set(allowlist) - needed)


def check_layers(
    root: Path,
    *,
    packages: Iterable[str] = PACKAGES,
    lab_allowlist: Iterable[tuple[str, str]] = LAB_IMPORT_ALLOWLIST,
    upward_allowlist: Iterable[tuple[str, str]] = UPWARD_IMPORT_ALLOWLIST,
    size_allowlist: Mapping[str, str] = SIZE_ALLOWLIST,
    max_lines: int = MAX_LINES,
    layers: Iterable[tuple[int, str, tuple[str, ...]]] = LAYERS,
) -> LayerReport:
    """All the rules on the packages under `root` (the repository root)."""
    modules = find_modules(root, packages)
    imports = find_imports(root, modules)
    lab_imports, unused_lab = find_lab_imports(imports, lab_allowlist)
    upward, unused_upward = find_upward_imports(imports, upward_allowlist)
    oversized, unused_size = find_oversized(root, modules, size_allowlist, max_lines)
    unused = [f"LAB_IMPORT_ALLOWLIST {importer} -> {imported}" for importer, imported in unused_lab]
    unused += [f"UPWARD_IMPORT_ALLOWLIST {importer} -> {imported}" for importer, imported in unused_upward]
    unused += [f"SIZE_ALLOWLIST {name} (missing or not over {max_lines} lines)" for name in unused_size]
    onnode = find_onnode_imports(imports)
    breaches, unplaced = find_layer_breaches(modules, imports, layers)
    return LayerReport(
        find_cycles(imports), lab_imports, upward, onnode, oversized, breaches, unplaced, unused
    )
