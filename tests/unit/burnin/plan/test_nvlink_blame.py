"""The rack as a failure domain: one statement about a slow rack, one about a tray that did not
register, per tray otherwise."""

from __future__ import annotations

from burnin.plan.nvlink_blame import KINDS, localise_racks


def rack(name: str, trays: int = 18) -> list[str]:
    return [f"{name}-t{t + 1:02d}" for t in range(trays)]


RACKS = {f"r0{r}": rack(f"r0{r}") for r in range(1, 5)}


def test_a_healthy_rack_says_nothing():
    assert localise_racks(RACKS) == []


def test_every_tray_slow_with_mnnvl_only_is_the_racks_nvlink_fabric():
    (blame,) = localise_racks(RACKS, mnnvl_slow=RACKS["r03"])
    assert blame.kind == "nvlink_fabric" and blame.rack == "r03"
    assert blame.nodes == tuple(RACKS["r03"])
    assert "the NVLink fabric of rack r03 is slow" in blame.message


def test_every_tray_slow_both_ways_is_the_network():
    (blame,) = localise_racks(RACKS, mnnvl_slow=RACKS["r02"], ib_slow=RACKS["r02"])
    assert blame.kind == "rack_network" and blame.rack == "r02"


def test_the_localisers_rack_verdict_counts_without_every_tray_named():
    (blame,) = localise_racks(RACKS, fabric=["r04"])
    assert blame.kind == "nvlink_fabric" and len(blame.nodes) == 18


def test_a_tray_that_did_not_register_is_named_by_its_slot():
    (blame,) = localise_racks(RACKS, unregistered=["r01-t07"])
    assert blame.kind == "tray_unregistered" and blame.nodes == ("r01-t07",)
    assert blame.message.startswith("tray 7 (r01-t07) of rack r01 did not register")


def test_the_other_trays_slow_beside_an_unregistered_one_are_still_the_fabric():
    others = [t for t in RACKS["r01"] if t != "r01-t07"]
    blames = localise_racks(RACKS, unregistered=["r01-t07"], mnnvl_slow=others)
    assert [b.kind for b in blames] == ["tray_unregistered", "nvlink_fabric"]
    assert len(blames[1].nodes) == 17


def test_no_tray_registered_is_the_rack():
    (blame,) = localise_racks(RACKS, unregistered=RACKS["r02"])
    assert blame.kind == "rack_unregistered" and blame.rack == "r02"


def test_single_trays_are_told_by_the_pass_they_were_slow_in():
    blames = localise_racks(RACKS, mnnvl_slow=["r01-t02", "r02-t03"], ib_slow=["r02-t03", "r03-t04"])
    assert [(b.kind, b.nodes) for b in blames] == [
        ("tray_nvlink", ("r01-t02",)),
        ("tray", ("r02-t03",)),
        ("tray_network", ("r03-t04",)),
    ]
    assert all(b.kind in KINDS for b in blames)


def test_one_tray_rack_is_never_a_rack_wide_verdict():
    (blame,) = localise_racks({"solo": ["solo-t01"]}, mnnvl_slow=["solo-t01"])
    assert blame.kind == "tray_nvlink"
