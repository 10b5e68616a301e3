"""Each HCA paired with the GPU whose memory loads it in the ib stage's GPUDirect mode."""

from __future__ import annotations

from burnin.plan.gdr_gpus import nearest_gpus


def test_profile_pairs_win_and_nothing_is_said():
    got = nearest_gpus(["mlx5_0", "mlx5_1"], 8, {"mlx5_0": 3, "mlx5_1": 6})
    assert got.gpus == {"mlx5_0": 3, "mlx5_1": 6}
    assert got.note == ""


def test_no_pairs_pairs_by_index_in_natural_order_and_says_so():
    hcas = ["mlx5_10", "mlx5_2", "mlx5_0", "mlx5_1", "mlx5_9"]  # mlx5_10 after mlx5_9, not after mlx5_1
    got = nearest_gpus(hcas, 8)
    assert got.gpus == {"mlx5_0": 0, "mlx5_1": 1, "mlx5_2": 2, "mlx5_9": 3, "mlx5_10": 4}
    assert "by index" in got.note and "GPU-to-NIC" in got.note


def test_more_hcas_than_gpus_share_gpus_and_says_so():
    got = nearest_gpus(["mlx5_0", "mlx5_1", "mlx5_2"], 2)
    assert got.gpus == {"mlx5_0": 0, "mlx5_1": 1, "mlx5_2": 0}
    assert "3 HCA(s) share 2 GPU(s)" in got.note


def test_pairs_missing_an_hca_fall_back_to_its_index_for_that_one():
    got = nearest_gpus(["mlx5_0", "mlx5_1"], 8, {"mlx5_0": 5})
    assert got.gpus == {"mlx5_0": 5, "mlx5_1": 1}
    assert "mlx5_1" in got.note and "by index" in got.note


def test_no_gpus_pairs_nothing():
    got = nearest_gpus(["mlx5_0"], 0)
    assert got.gpus == {} and "no GPUs" in got.note


def test_only_the_compute_fabrics_hcas_are_paired_with_gpus():
    """A B300 node's storage ConnectX-7 (MT4129) beside its 8 ConnectX-8 rails gets no GPU."""
    from bringup.profiles.load import load_profile
    from burnin.checks.ib_load import IbPortInfo
    from burnin.plan.gdr_gpus import with_gpus
    from tests.paths import REPO

    profile, _ = load_profile("b300-sxm-8x800g", REPO / "inventories/profiles")
    rails = [IbPortInfo("n", f"mlx5_{i}", 1, link_layer="InfiniBand", ca_type="MT4131") for i in (0, 1, 6, 7)]
    storage = [IbPortInfo("n", f"mlx5_{i}", 1, link_layer="InfiniBand", ca_type="MT4129") for i in (2, 3)]
    ports, note = with_gpus(rails + storage, profile, "InfiniBand")
    assert {p.hca: p.gpu for p in ports} == {
        "mlx5_0": 0, "mlx5_1": 1, "mlx5_6": 2, "mlx5_7": 3, "mlx5_2": None, "mlx5_3": None,
    }  # fmt: skip
    assert "share" not in note
