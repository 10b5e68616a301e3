"""`burnin evaluate DIR` / `FILE FILE ...`: a ticket's attachments judged in one table
(burnin.evaluate.handed_in.evaluate_files, rendered by burnin/cli/inspect.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from burnin.cli import main
from burnin.evaluate import handed_in
from burnin.evaluate.handed_in import evaluate_files
from burnin.result import Verdict
from tests.paths import REPO
from tests.profiles import shipped

PROFILE = shipped()
STANDINS = REPO / "bringup" / "lab" / "standins" / "samples"
HEALTHY = STANDINS / "nvidia_smi_q_8xh100_535_183.txt"
PORT_DOWN = STANDINS / "ibstat_8xh100_cx7_ndr_ib_mlx5_6_down_polling_DERIVED.txt"
HEALTHY_IB = STANDINS / "ibstat_8xh100_cx7_ndr_ib_all_active_DERIVED.txt"


@pytest.fixture
def attachments(tmp_path: Path) -> Path:
    folder = tmp_path / "ticket"
    (folder / "node7").mkdir(parents=True)
    shutil.copy(HEALTHY, folder / "smi.txt")
    shutil.copy(PORT_DOWN, folder / "node7" / "ibstat.txt")
    (folder / "core.bin").write_bytes(b"\x7fELF\x00\x01" * 100)
    (folder / ".hidden").write_text("not an attachment")
    return folder


def test_a_directory_is_judged_file_by_file_and_the_worst_verdict_is_the_answer(attachments: Path) -> None:
    result = evaluate_files([attachments], PROFILE)
    rows = {Path(f.path).relative_to(attachments).as_posix(): f for f in result.files}
    assert list(rows) == ["core.bin", "node7/ibstat.txt", "smi.txt"]  # sorted, the hidden file left out
    assert rows["smi.txt"].tool == "nvidia-smi -q" and rows["smi.txt"].verdict is Verdict.PASS
    ib = rows["node7/ibstat.txt"]
    assert ib.tool == "ibstat" and ib.verdict is Verdict.FAIL and "mlx5_6 port 1" in ib.first_finding()
    binary = rows["core.bin"]
    assert binary.tool is None and binary.verdict is Verdict.UNKNOWN and "binary" in binary.first_finding()
    assert result.verdict is Verdict.FAIL


def test_an_oversized_file_is_an_unknown_row_and_the_others_carry_on(tmp_path: Path, monkeypatch) -> None:
    big = tmp_path / "dmesg-huge.txt"
    big.write_text("x" * 5000)
    monkeypatch.setattr(handed_in, "MAX_BYTES", 4096)
    result = evaluate_files([big, HEALTHY_IB], PROFILE)
    assert [f.verdict for f in result.files] == [Verdict.UNKNOWN, Verdict.PASS]
    assert "over the" in result.files[0].first_finding()
    assert result.verdict is Verdict.UNKNOWN


def test_an_unreadable_file_is_an_unknown_row(tmp_path: Path, monkeypatch) -> None:
    locked = tmp_path / "locked.txt"
    locked.write_text("x\n")
    real_open = Path.open

    def refusing_open(self: Path, *args, **kwargs):  # a mode root would read through anyway
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing_open)
    result = evaluate_files([locked, HEALTHY_IB], PROFILE)
    assert result.files[0].verdict is Verdict.UNKNOWN
    assert "could not read it: Permission denied" in result.files[0].first_finding()
    assert result.files[1].verdict is Verdict.PASS


def test_no_file_at_all_is_unknown(tmp_path: Path) -> None:
    assert evaluate_files([tmp_path], PROFILE).verdict is Verdict.UNKNOWN


def _evaluate(*args: str):
    base = ["--inventory-dir", str(REPO / "inventories"), "evaluate", "--profile", "h100-sxm-8x400g"]
    return CliRunner().invoke(main, [*base, *args])


def test_the_command_prints_one_row_a_file_and_exits_with_the_worst(attachments: Path, monkeypatch) -> None:
    monkeypatch.chdir(attachments.parent)  # short paths: a long one folds across the table's lines
    res = _evaluate(attachments.name)
    assert res.exit_code == 1, res.output
    # The table folds a long cell across lines at a narrow terminal: the short words are whole.
    for text in (
        "3 file(s) judged",
        "ticket/",
        "ibstat",
        "nvidia-smi -q",
        "PASS",
        "FAIL",
        "UNKNOWN",
        "mlx5_6",
    ):
        assert text in res.output, text
    assert res.output.rstrip().endswith("verdict: FAIL")
    doc = json.loads(_evaluate("--json", attachments.name).stdout)
    assert doc["verdict"] == "FAIL"
    assert [(Path(f["file"]).name, f["tool"], f["verdict"]) for f in doc["files"]] == [
        ("core.bin", None, "UNKNOWN"),
        ("ibstat.txt", "ibstat", "FAIL"),
        ("smi.txt", "nvidia-smi -q", "PASS"),
    ]
    assert doc["files"][2]["evaluation"]["tool"] == "nvidia-smi -q"


def test_several_healthy_files_exit_0() -> None:
    res = _evaluate(str(HEALTHY), str(HEALTHY_IB))
    assert res.exit_code == 0, res.output
    assert "2 file(s) judged" in res.output and "PASS" in res.output


def test_stdin_is_read_alone() -> None:
    res = _evaluate("-", str(HEALTHY))
    assert res.exit_code == 2 and "stdin" in res.output
