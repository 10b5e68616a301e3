"""Unit tests mirror the source by name (docs/architecture.md, "Where each kind of code goes"):
the tests of ``burnin/checks/gpu.py`` are ``tests/unit/burnin/checks/test_gpu.py``, or
``test_gpu_<aspect>.py`` where one module's tests are several files (``test_nvidia_smi_lazy.py``).
A test file counts for the module in its directory with the longest name it starts with, so
``test_nccl_local.py`` is ``nccl_local.py``'s, not ``nccl.py``'s. A private module's leading
underscore may be left out (``_common.py`` -> ``test_common_numbers.py``).

A product module with no test module of its name is listed in ``UNMIRRORED``, keyed by its path,
with one line saying where it is tested (or why it is not), naming the test files. The test fails
on a module that is neither mirrored nor listed, on an entry that no longer applies (its module is
mirrored now, or gone: moving a module means moving its key too), and on an entry naming a test
file that does not exist. A key ending in ``/`` covers every module under that directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("bringup", "burnin")
# The lab is the test rig, not the product: tests/lab drives it and its unit tests are its own.
NOT_PRODUCT = ("bringup/lab/",)
TEST_FILE = re.compile(r"\btests/[\w/]+\.py\b")

UNMIRRORED: dict[str, str] = {
    # -- bringup ------------------------------------------------------------------------------------
    "bringup/__main__.py": "`python -m bringup`: run by tests/unit/bringup/inventory/test_rack.py",
    "bringup/cli/hostkeys.py": "`bringup hostkeys scan|forget`: tests/unit/bringup/ssh/test_hostkey_records.py",
    "bringup/cli/main.py": "the `bringup` group every bringup CLI test invokes "
    "(tests/unit/bringup/cli/test_common.py, tests/unit/bringup/cli/test_configure.py)",
    "bringup/cli/provision.py": "`bringup provision`: exercised only by the lab test tests/lab/test_provision_lab.py",
    "bringup/configure/rack.py": "`bringup configure` as a library call: through the command by "
    "tests/unit/bringup/cli/test_configure.py",
    "bringup/core/errors.py": "two exception classes, asserted by the tests of what raises them "
    "(tests/unit/bringup/profiles/test_load.py, tests/unit/bringup/fleet/test_select.py)",
    "bringup/fleet/migrations/": "Alembic revisions: tests/unit/bringup/fleet/test_schema.py upgrades a store "
    "through the chain and compares it with the models; tests/unit/bringup/fleet/test_evidence.py "
    "tests what 0003 moves",
    "bringup/fleet/models.py": "the store's tables: tests/unit/bringup/fleet/test_schema.py compares them with the "
    "migrations; tests/unit/bringup/fleet/test_evidence.py reads them",
    "bringup/fleet/prune.py": "tested in the prune section of tests/unit/bringup/fleet/test_evidence.py",
    "bringup/fleet/reads.py": "the rack-wide reads of `burnin golden`: tests/unit/burnin/golden/test_rules_reads.py",
    "bringup/fleet/results_write.py": "FleetStore.add_results_many's writer: "
    "tests/unit/bringup/fleet/test_store_batched.py",
    "bringup/fleet/run_list.py": "test_list_runs_marks_abandoned_ones... in tests/unit/bringup/fleet/test_runs.py",
    "bringup/ssh/hostkeys.py": "pinned host keys: tests/unit/bringup/ssh/test_hostkey_records.py, "
    "tests/unit/bringup/ssh/test_fanout_hostkeys.py, tests/unit/bringup/ssh/test_connect.py",
    "bringup/core/problems.py": "the Problem record of input validation: through its users by "
    "tests/unit/bringup/inventory/test_rack.py and tests/unit/bringup/profiles/test_load.py",
    "bringup/profiles/model.py": "the profile's typed model: through bringup/profiles/load.py by "
    "tests/unit/bringup/profiles/test_load.py",
    "bringup/provision/backend.py": "the backend interface: through its two backends and the orchestrator "
    "(tests/unit/bringup/provision/test_orchestrator.py, tests/unit/bringup/provision/pxe/test_backend.py, "
    "tests/unit/bringup/provision/maas/test_backend.py)",
    "bringup/provision/maas/context.py": "a protocol MaasBackend satisfies: through the backend by "
    "tests/unit/bringup/provision/maas/test_backend.py",
    "bringup/provision/maas/node.py": "one node's way through MAAS: through the backend by "
    "tests/unit/bringup/provision/maas/test_backend.py",
    "bringup/provision/maas/redact.py": "through the backend by tests/unit/bringup/provision/maas/test_backend.py "
    "(assert_secret_free on every log and outcome)",
    "bringup/provision/maas/userdata.py": "test_user_data_template_is_rendered_per_node in "
    "tests/unit/bringup/provision/maas/test_backend.py",
    "bringup/provision/pxe/reports.py": "what nodes post to the boot server: through it by "
    "tests/unit/bringup/provision/pxe/test_bootserver.py",
    "bringup/provision/pxe/tokens.py": "the boot server's tokens: tests/unit/bringup/provision/pxe/test_bootserver_tokens.py",
    "bringup/provision/rack.py": "`bringup provision` as a library call: tests/unit/bringup/provision/test_orchestrator.py",
    "bringup/inventory/provision_vars.py": "the typed provisioning settings: "
    "tests/unit/bringup/provision/pxe/test_backend_settings_injection.py",
    "bringup/redfish/messages.py": "pure JSON helpers: through their users by "
    "tests/unit/bringup/redfish/test_readers.py and tests/unit/bringup/redfish/test_hardware.py",
    "bringup/redfish/nic_placement.py": "nics.place() is its place(): tests/unit/bringup/redfish/test_nics.py, "
    "tests/unit/bringup/redfish/test_nics_shapes.py",
    "bringup/redfish/power.py": "tests/unit/bringup/redfish/test_client_transport.py (lost answers) and "
    "tests/unit/bringup/redfish/test_vendors.py",
    "bringup/redfish/rack.py": "the rack-wide operations: tests/unit/bringup/redfish/test_targets_plain_http.py, "
    "tests/unit/bringup/redfish/vendors/test_dell_prechecks.py, and through the commands by "
    "tests/unit/bringup/cli/test_redfish.py",
    "bringup/redfish/vendors/base.py": "the vendor interface: every vendor shape in tests/unit/bringup/redfish/test_vendors.py",
    "bringup/redfish/vendors/generic.py": "the base behaviour unchanged: vendor_for('generic') in "
    "tests/unit/bringup/redfish/vendors/test_dell.py, and the racks of tests/unit/bringup/cli/test_redfish.py",
    "bringup/redfish/vendors/supermicro.py": "the Supermicro tree in tests/unit/bringup/redfish/test_vendors.py",
    # -- burnin -------------------------------------------------------------------------------------
    "burnin/accept/conformance_model.py": "the records of the order comparison: "
    "tests/unit/burnin/accept/test_conformance.py",
    "burnin/accept/conformance_parts.py": "each part's comparison: tests/unit/burnin/accept/test_conformance.py",
    "burnin/accept/outcome.py": "the acceptance records, built by tests/unit/burnin/accept/acceptance_result.py "
    "for tests/unit/burnin/accept/test_report.py and tests/unit/burnin/accept/test_bundle.py",
    "burnin/checks/ib_evidence.py": "through EVIDENCE_CHECKS by tests/unit/burnin/checks/test_evidence_checks.py",
    "burnin/checks/load.py": "stress_shell: the copy_bandwidth command's test in "
    "tests/unit/burnin/checks/test_copy_bandwidth.py; gpu_stress on a GPU by tests/gpu/test_gpu_local.py",
    "burnin/checks/nccl_evidence.py": "through EVIDENCE_CHECKS by tests/unit/burnin/checks/test_evidence_checks.py",
    "burnin/checks/replay_record.py": "parse_record: tests/unit/burnin/checks/test_ib_replay.py, "
    "tests/unit/burnin/checks/test_nccl_replay.py",
    "burnin/cli/golden.py": "`burnin golden` and `burnin report`: tests/unit/burnin/golden/test_rules.py, "
    "tests/unit/burnin/report/test_report.py",
    "burnin/cli/inspect.py": "`burnin evaluate|results|checks`: tests/unit/burnin/evaluate/test_handed_in.py, "
    "tests/unit/bringup/cli/test_store.py",
    "burnin/cli/rejudge.py": "`burnin rejudge`: tests/unit/burnin/run/test_rejudge.py",
    "burnin/cli/render.py": "how every burnin command shows verdicts: through them by "
    "tests/unit/burnin/evaluate/test_handed_in.py and tests/unit/burnin/cli/test_run_cmd.py",
    "burnin/cli/service.py": "`burnin health` by tests/unit/burnin/service/test_health_run.py; `burnin sync` only "
    "by the lab tests tests/lab/test_service_lab.py and tests/lab/test_nightly_lab.py",
    "burnin/golden/select.py": "select_and_apply: tests/unit/burnin/golden/test_rules_reads.py",
    "burnin/history/figures.py": "tests/unit/burnin/report/test_reliability_section.py, "
    "tests/unit/burnin/history/test_node_fail.py",
    "burnin/history/fleet.py": "tests/unit/burnin/history/test_jobs.py, tests/unit/burnin/history/test_node_fail.py, "
    "tests/unit/burnin/cli/test_history_cmd.py",
    "burnin/history/read.py": "read_signals: tests/unit/burnin/history/test_signals.py, "
    "tests/unit/burnin/history/test_lemons.py",
    "burnin/onnode/pcie_collect.py": "runs on the node: tests/unit/burnin/checks/test_pcie_part_serials.py and "
    "tests/unit/burnin/checks/test_robust.py (on this machine's sysfs)",
    "burnin/onnode/stress.py": "the GPU load, which needs a GPU: tests/gpu/test_gpu_local.py (gpu_stress)",
    "burnin/parsers/errors.py": "ParseError, asserted by every parser's tests (tests/unit/burnin/parsers/test_slurm.py, "
    "tests/unit/burnin/parsers/test_kernel_log.py)",
    "burnin/report/heatmap.py": "tests/unit/burnin/report/test_report.py (heat_map) and "
    "tests/unit/burnin/report/test_html_fleet.py",
    "burnin/report/junit.py": "tests/unit/burnin/report/test_report.py (render_junit)",
    "burnin/report/matrix.py": "the node-by-check matrix of the HTML report: tests/unit/burnin/report/test_html_fleet.py "
    "and tests/unit/burnin/report/test_report.py",
    "burnin/report/page.py": "the page shell of every HTML report: tests/unit/burnin/report/test_report.py",
    "burnin/report/problems.py": "the report's failure section: tests/unit/burnin/report/test_report.py",
    "burnin/result.py": "the verdict vocabulary every check test asserts on "
    "(tests/unit/burnin/checks/test_nccl.py, tests/unit/burnin/stages/test_runner.py)",
    "burnin/service/local.py": "runs `burnin health`'s commands: through it by "
    "tests/unit/burnin/service/test_health_run.py",
    "burnin/service/slurm.py": "tests/unit/burnin/service/test_nightly_slurm.py, "
    "tests/unit/burnin/history/test_node_fail.py, tests/unit/burnin/stages/test_slurm_launch.py",
    "burnin/stages/ib_discovery.py": "tests/unit/burnin/stages/test_ib.py (parse_discovery, with_switch_ports)",
    "burnin/stages/jobs.py": "what flows between runner and stages: tests/unit/burnin/stages/test_runner.py, "
    "tests/unit/burnin/stages/test_ib.py",
}


@dataclass(frozen=True)
class Layout:
    missing: list[str]  # product modules with no test module of their name and no entry
    stale: list[str]  # entries whose module is mirrored now, or no longer exists
    broken: list[str]  # entries naming no test file, or one that does not exist


def product_modules(root: Path) -> list[str]:
    """Every product module as a path relative to ``root`` (``burnin/checks/gpu.py``)."""
    found = []
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            rel = path.relative_to(root).as_posix()
            if path.name != "__init__.py" and not rel.startswith(NOT_PRODUCT):
                found.append(rel)
    return sorted(found)


def _names(stem: str) -> set[str]:
    """The names a test file may carry for a module: its own, and a private one's without the ``_``."""
    return {stem, stem[1:]} if stem.startswith("_") and not stem.startswith("__") else {stem}


def mirrored(root: Path, modules: list[str]) -> set[str]:
    """The modules that have a test module of their name beside them under tests/unit."""
    by_dir: dict[str, list[str]] = {}
    for module in modules:
        by_dir.setdefault(str(Path(module).parent), []).append(module)
    found: set[str] = set()
    for directory, siblings in by_dir.items():
        tests = root / "tests" / "unit" / directory
        for test in tests.glob("test_*.py") if tests.is_dir() else ():
            name = test.stem[len("test_") :]
            owners = [
                (len(n), m)
                for m in siblings
                for n in _names(Path(m).stem)
                if name == n or name.startswith(n + "_")
            ]
            if owners:
                found.add(max(owners)[1])
    return found


def check_layout(root: Path, allowlist: dict[str, str]) -> Layout:
    modules = product_modules(root)
    found = mirrored(root, modules)
    unmirrored = [m for m in modules if m not in found]

    def covers(key: str, module: str) -> bool:
        return module.startswith(key) if key.endswith("/") else module == key

    missing = [m for m in unmirrored if not any(covers(k, m) for k in allowlist)]
    stale = [k for k in allowlist if not any(covers(k, m) for m in unmirrored)]
    broken = []
    for key, why in allowlist.items():
        cited = TEST_FILE.findall(why)
        if not cited:
            broken.append(f"{key}: names no test file (tests/...py)")
        broken += [f"{key}: {path} does not exist" for path in cited if not (root / path).is_file()]
    return Layout(missing, stale, broken)


def test_every_product_module_has_a_test_module_of_its_name_or_says_where_it_is_tested():
    layout = check_layout(REPO, UNMIRRORED)
    assert not layout.missing, (
        "product modules without tests/unit/<same path>/test_<module>[_<aspect>].py: move or name their "
        "tests so, or add each to UNMIRRORED in tests/unit/test_test_layout.py with where it is tested:\n  "
        + "\n  ".join(layout.missing)
    )
    assert not layout.stale, (
        "UNMIRRORED entries whose module is mirrored now or is gone (a moved module takes its key along):\n  "
        + "\n  ".join(layout.stale)
    )
    assert not layout.broken, "UNMIRRORED entries citing test files wrongly:\n  " + "\n  ".join(layout.broken)


# -- the checker on small fake trees -----------------------------------------------------------------


def tree(root: Path, *paths: str) -> Path:
    for rel in paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    return root


def test_a_module_without_a_test_module_of_its_name_is_found(tmp_path):
    root = tree(
        tmp_path,
        "burnin/checks/__init__.py",
        "burnin/checks/gpu.py",
        "burnin/checks/ib.py",
        "tests/unit/burnin/checks/test_ib.py",
        "tests/unit/burnin/test_gpu.py",  # the wrong directory: no mirror of burnin/checks/gpu.py
        "tests/unit/burnin/checks/test_gpus.py",  # another name
        "bringup/lab/rack.py",  # the lab is not product code
    )
    assert check_layout(root, {}) == Layout(missing=["burnin/checks/gpu.py"], stale=[], broken=[])
    listed = {"burnin/checks/gpu.py": "only by tests/unit/burnin/test_gpu.py"}
    assert check_layout(root, listed) == Layout(missing=[], stale=[], broken=[])


def test_an_aspect_counts_for_the_longest_module_name_it_starts_with(tmp_path):
    root = tree(
        tmp_path,
        "burnin/checks/nccl.py",
        "burnin/checks/nccl_local.py",
        "burnin/parsers/_common.py",
        "burnin/parsers/nvidia_smi.py",
        "tests/unit/burnin/checks/test_nccl_local.py",
        "tests/unit/burnin/checks/test_nccl_local_gpus.py",
        "tests/unit/burnin/parsers/test_common_numbers.py",
        "tests/unit/burnin/parsers/test_nvidia_smi_lazy.py",
    )
    assert check_layout(root, {}).missing == ["burnin/checks/nccl.py"]
    tree(root, "tests/unit/burnin/checks/test_nccl_groups.py")
    assert check_layout(root, {}).missing == []


def test_an_entry_for_a_mirrored_or_missing_module_is_stale(tmp_path):
    root = tree(
        tmp_path,
        "burnin/golden/rules.py",
        "tests/unit/burnin/golden/test_rules.py",
        "tests/unit/burnin/test_x.py",
    )
    listed = {
        "burnin/golden/rules.py": "tests/unit/burnin/test_x.py",  # mirrored now
        "burnin/moved.py": "tests/unit/burnin/test_x.py",  # gone (moved: its key moves too)
        "burnin/history/": "tests/unit/burnin/test_x.py",  # a directory with nothing unmirrored
    }
    assert check_layout(root, listed).stale == list(listed)


def test_a_directory_entry_covers_every_module_under_it(tmp_path):
    root = tree(
        tmp_path,
        "bringup/fleet/migrations/env.py",
        "bringup/fleet/migrations/versions/0001_baseline.py",
        "bringup/fleet/store.py",
        "tests/unit/bringup/fleet/test_schema.py",
    )
    listed = {"bringup/fleet/migrations/": "tests/unit/bringup/fleet/test_schema.py"}
    assert check_layout(root, listed) == Layout(missing=["bringup/fleet/store.py"], stale=[], broken=[])


def test_an_entry_must_name_test_files_that_exist(tmp_path):
    root = tree(tmp_path, "bringup/cli/ui.py", "bringup/core/errors.py", "tests/unit/bringup/test_real.py")
    listed = {
        "bringup/cli/ui.py": "tested somewhere",
        "bringup/core/errors.py": "tests/unit/bringup/test_real.py and tests/unit/bringup/test_gone.py",
    }
    assert check_layout(root, listed).broken == [
        "bringup/cli/ui.py: names no test file (tests/...py)",
        "bringup/core/errors.py: tests/unit/bringup/test_gone.py does not exist",
    ]
