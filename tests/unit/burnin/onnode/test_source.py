"""The on-node programs are found one way, and each is a standalone program (no project imports)."""

from __future__ import annotations

import ast

import pytest

from burnin import onnode
from tests.paths import REPO


@pytest.mark.parametrize("name", onnode.PROGRAMS)
def test_source_is_the_program_file_and_imports_nothing_of_the_project(name: str) -> None:
    text = onnode.source(name)
    assert text == (REPO / "burnin" / "onnode" / f"{name}.py").read_text(encoding="utf-8")
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert not imported & {"bringup", "burnin", "tests"}


def test_an_unknown_program_is_refused() -> None:
    with pytest.raises(ValueError, match="no on-node program"):
        onnode.source("nope")
