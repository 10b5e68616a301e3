"""smpquery pkeys tables of many ports, each under its '== NODE HCA PORT ==' header."""

from __future__ import annotations

import pytest

from burnin.fabric.pkeys import odd_tables, parse_pkey_tables
from burnin.fabric.plan import End, PlanError
from tests.unit.burnin.parsers._samples import load


def test_tables_keep_the_non_empty_entries_with_their_membership_bit():
    full, tenant = (
        load("smpquery_pkeys_hca_default_full_SYNTHETIC.txt"),
        load("smpquery_pkeys_hca_tenant_0x8010_SYNTHETIC.txt"),
    )
    tables = parse_pkey_tables(
        f"== gpu1 mlx5_0 1 ==\n{full}== gpu2 mlx5_0 1 ==\n{tenant}== gpu3 mlx5_0 1 ==\n{full}", "k"
    )
    assert [(t.end, t.text()) for t in tables] == [
        (End("gpu1", "mlx5_0", 1), "0xffff"),
        (End("gpu2", "mlx5_0", 1), "0x7fff 0x8010"),
        (End("gpu3", "mlx5_0", 1), "0xffff"),
    ]
    common, odd = odd_tables(tables)
    assert common == {0xFFFF} and [t.end.device for t in odd] == ["gpu2"]


def test_a_table_cut_before_its_capacity_line_is_refused():
    full = load("smpquery_pkeys_hca_default_full_SYNTHETIC.txt")
    cut = full.rsplit("64 pkeys", 1)[0]
    with pytest.raises(PlanError, match=r"k: line 1: the table of gpu1 mlx5_0 port 1 has no capacity line"):
        parse_pkey_tables(f"== gpu1 mlx5_0 1 ==\n{cut}", "k")
    with pytest.raises(PlanError, match="no '== NODE HCA PORT ==' section"):
        parse_pkey_tables(full, "k")
