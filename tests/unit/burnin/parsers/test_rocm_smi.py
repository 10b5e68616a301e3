"""rocm-smi's text logs: the edges the samples (tests/fixtures/samples/rocm_smi_*) do not show."""

from __future__ import annotations

import pytest

from burnin.parsers import ParseError
from burnin.parsers.rocm_smi import RocmGpu, is_rocm_smi, parse_product, parse_ras, parse_showtopo
from tests.unit.burnin.parsers._samples import load, names

HEADER = "=" * 28 + " ROCm System Management Interface " + "=" * 28
END = "=" * 90 + "\n" + "=" * 34 + " End of ROCm SMI Log " + "=" * 35


def _log(title: str, lines: list[str], end: bool = True) -> str:
    spacer = "=" * 40 + f" {title} " + "=" * 40
    return "\n\n" + "\n".join([HEADER, spacer, *lines]) + ("\n" + END + "\n" if end else "\n")


def test_product_reads_each_gpus_series_model_and_bus_in_index_order() -> None:
    gpus = parse_product(load("rocm_smi_showproduct_4xmi300a.txt"))
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert gpus[0].series == "Aqua Vanjaram [Instinct MI300A]" and gpus[0].names == ("Instinct MI300A",)
    assert gpus[0].model == "0x74a0" and gpus[0].sku is None  # printed N/A


def test_product_of_rocm_4_reads_lower_case_keys_and_a_bare_id_names_nothing() -> None:
    (gpu,) = parse_product(load("rocm_smi_showproductname_mi100_rocm40_PARTIAL.txt"))
    assert (gpu.series, gpu.model, gpu.sku, gpu.names) == ("0x738c", "0xc34", "D34314", ())


@pytest.mark.parametrize(
    ("series", "names"),
    [
        ("AMD Instinct MI300X", ("AMD Instinct MI300X",)),
        ("Arcturus GL-XL [AMD Instinct MI100]", ("AMD Instinct MI100",)),
        ("Aldebaran/MI200 [Instinct MI250X/MI250]", ("Instinct MI250X", "MI250")),
        ("0x74a1", ()),
        (None, ()),
    ],
)
def test_a_series_names_the_products_of_its_pci_ids_name(series: str | None, names: tuple[str, ...]) -> None:
    assert RocmGpu(0, series, None, None, None, None).names == names


def test_product_joins_the_bus_and_serial_sections_to_each_gpu() -> None:
    text = (
        "\n\n"
        + "\n".join(
            [
                HEADER,
                "=" * 40 + " PCI Bus ID " + "=" * 40,
                "GPU[0]\t\t: PCI Bus: 0000:0C:00.0",
                "GPU[1]\t\t: PCI Bus: 0000:22:00.0",
                "=" * 90,
                "=" * 40 + " Product Info " + "=" * 40,
                "GPU[0]\t\t: Card Series: \t\tAMD Instinct MI300X",
                "GPU[1]\t\t: Card Series: \t\tAMD Instinct MI300X",
                "=" * 90,
                "=" * 40 + " Serial Number " + "=" * 40,
                "GPU[0]\t\t: Serial Number: 692407004236",
                "GPU[1]\t\t: Serial Number: N/A",
                "=" * 90,
                END,
            ]
        )
        + "\n"
    )
    gpus = parse_product(text)
    assert [(g.bus, g.serial) for g in gpus] == [("0000:0C:00.0", "692407004236"), ("0000:22:00.0", None)]


def test_rocm_smis_logging_lines_pasted_with_it_are_skipped() -> None:
    text = _log(
        "Product Info",
        ["GPU[0]\t\t: Card Series: \t\tAMD Instinct MI300X", "WARNING: \t\t One or more commands failed"],
    )
    assert [g.series for g in parse_product(text)] == ["AMD Instinct MI300X"]


@pytest.mark.parametrize("name", names("rocm_smi_"))
def test_every_sample_cut_before_its_end_line_is_refused(name: str) -> None:
    """rocm-smi's end line tells a whole log from a cut one: without it, nothing is read."""
    parse = parse_ras if "rasinfo" in name else parse_showtopo if "showtopo" in name else parse_product
    lines = load(name).splitlines(keepends=True)
    ended = any("End of ROCm SMI Log" in line for line in lines)
    if ended:
        parse("".join(lines))  # whole: read
    for end in range(len(lines) - (1 if ended else 0)):
        with pytest.raises(ParseError):
            parse("".join(lines[:end]))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "GPU: 0\n    ASIC:\n        MARKET_NAME: MI300X\n",  # amd-smi's
        _log("Product Info", []),  # no GPU
        _log("RAS Info", ["GPU[0]\t\t: Card Series: \t\tMI300X"]),  # not a product section
        "some prompt $ rocm-smi\n" + _log("Product Info", ["GPU[0]\t\t: Card Series: \t\tMI300X"]),
        _log("Product Info", ["GPU[0]\t\t: Card Series: \t\tMI300X"]) + "trailing text\n",
        _log("Product Info", ["GPU[0]\t\t: Card Series: \t\tMI300X"]) * 2,  # two logs run together
        _log("Product Info", ["GPU[0]  Card Series  MI300X"]),
    ],
)
def test_product_refuses_what_is_not_one_whole_log(text: str) -> None:
    with pytest.raises(ParseError):
        parse_product(text)


HEADS = "         Block       Status    Correctable Error  Uncorrectable Error  "


def _table(index: int, rows: list[str], heads: str = HEADS) -> list[str]:
    return ["", f"GPU[{index}]: \tRAS INFO", heads, *rows, "_" * 90]


def test_ras_reads_counts_where_printed_and_the_state_alone_elsewhere() -> None:
    (gpu,) = parse_ras(load("rocm_smi_showrasinfo_1gpu_umc_ue_DERIVED.txt"))
    umc, athub = gpu.blocks[0], gpu.blocks[4]
    assert (umc.name, umc.status, umc.correctable, umc.uncorrectable) == ("UMC", "ENABLED", 0, 1)
    assert (athub.name, athub.correctable, athub.uncorrectable) == ("ATHUB", None, None)
    assert [b.name for b in gpu.blocks if b.status == "DISABLED"] == ["XGMI_WAFL"]


def test_ras_before_rocm_5_5_reads_its_cells_correctable_first_whatever_its_heads_say() -> None:
    old = "         Block       Status    uncorrectable err  correctable err  "
    text = _log(
        "RAS Info", _table(0, ["           UMC        ENABLED                  5                  0  "], old)
    )
    (gpu,) = parse_ras(text)
    assert (gpu.blocks[0].correctable, gpu.blocks[0].uncorrectable) == (5, 0)


def test_ras_of_a_gpu_without_ras_is_a_table_of_blank_rows() -> None:
    """printTableLog prints an empty row for each block whose state it could not read."""
    text = _log("RAS Info", [*_table(0, ["", "", ""]), *_table(1, ["           UMC        ENABLED   0   0"])])
    gpus = parse_ras(text)
    assert [(g.index, len(g.blocks)) for g in gpus] == [(0, 0), (1, 1)]


@pytest.mark.parametrize(
    "text",
    [
        _log("RAS Info", []),  # no table
        _log("RAS Info", ["GPU[0]: \tRAS INFO", HEADS, "           UMC        ENABLED   0   0"]),  # no rule
        _log("RAS Info", _table(0, ["           UMC        ENABLED   0"])),  # one count of two
        _log(
            "RAS Info", ["GPU[0]: \tRAS INFO", "           UMC        ENABLED   0   0", "_" * 90]
        ),  # no heads
        _log("RAS Info", [*_table(0, []), *_table(0, [])]),  # a GPU twice
        _log("RAS Info", ["           UMC        ENABLED   0   0"]),  # a row in no table
        _log("Product Info", ["GPU[0]\t\t: Card Series: \t\tMI300X"]),
    ],
)
def test_ras_refuses_what_is_not_its_whole_tables(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ras(text)


def test_a_log_is_told_from_amd_smis_output_by_its_header_or_end() -> None:
    assert is_rocm_smi(load("rocm_smi_showrasinfo_mi50_gpu0_PARTIAL.txt"))
    assert is_rocm_smi("GPU[0]\t\t: Card Series: x\n" + END)
    assert not is_rocm_smi(load("amd_smi_static_4xmi300a.txt"))


def _topo(title: str, cells: list[list[str]], width: int = 90) -> list[str]:
    """A matrix as rocm-smi prints it (printTableRow: '%-6s ' then '%-12s ' per cell)."""
    n = len(cells)
    spacer = f" {title} between two GPUs "
    spacer += "=" * (len(spacer) % 2)
    fill = "=" * ((width - len(spacer)) // 2)
    head = "       " + "".join(f"{f'GPU{i}':<12} " for i in range(n))
    rows = [f"{f'GPU{i}':<6} " + "".join(f"{c:<12} " for c in row) for i, row in enumerate(cells)]
    return [fill + spacer + fill, head, *rows, ""]


def _types(n: int, down: set[frozenset[int]] = frozenset()) -> list[list[str]]:
    return [["0" if a == b else ("PCIE" if {a, b} in down else "XGMI") for b in range(n)] for a in range(n)]


def test_showtopo_reads_every_matrix_by_its_name_and_skips_the_numa_lines() -> None:
    topo = parse_showtopo(load("rocm_smi_showtopo_8xmi308x.txt"))
    assert topo.gpus == tuple(range(8)) and set(topo.tables) == {"Weight", "Hops", "Link Type"}
    assert topo.cell("Link Type", 2, 5) == "XGMI" and topo.cell("Weight", 0, 7) == "15"
    assert topo.cell("Hops", 3, 3) == "0" and topo.cell("Link Type", 0, 8) is None


def test_showtopo_reads_the_pair_a_derived_fault_puts_over_pcie() -> None:
    topo = parse_showtopo(load("rocm_smi_showtopo_8xmi308x_gpu2_gpu5_pcie_DERIVED.txt"))
    pcie = sorted((a, b) for (a, b), v in topo.tables["Link Type"].items() if v == "PCIE")
    assert pcie == [(2, 5), (5, 2)]


def _showtopo(lines: list[str]) -> str:
    return "\n\n" + "\n".join([HEADER, *lines, END]) + "\n"


def test_showtopo_keeps_the_cells_rocm_smi_could_not_read() -> None:
    cells = _types(3)
    cells[0][2] = cells[2][0] = "XXXX"
    topo = parse_showtopo(_showtopo(_topo("Link Type", cells)))
    assert topo.cell("Link Type", 0, 2) == "XXXX" and topo.cell("Link Type", 0, 1) == "XGMI"


@pytest.mark.parametrize(
    "lines",
    [
        [],  # no table
        _topo("Weight", [["0", "15"], ["15", "0"]]),  # no link type table
        _topo("Link Type", _types(3))[:-2],  # a row missing
        [
            line.rsplit(maxsplit=1)[0] if line.startswith("GPU1") else line
            for line in _topo("Link Type", _types(3))
        ],
        _topo("Link Type", _types(3)) + _topo("Hops", [["0", "1"], ["1", "0"]]),  # other GPUs
        ["=" * 30 + " Link Type between two GPUs " + "=" * 30, "GPU0 GPU0", "GPU0 0 0", "GPU0 0 0"],
        ["=" * 30 + " Link Type between two GPUs " + "=" * 30, "GPU0 0 XGMI", "GPU1 XGMI 0"],  # no header
    ],
)
def test_showtopo_refuses_what_is_not_its_whole_matrices(lines: list[str]) -> None:
    with pytest.raises(ParseError):
        parse_showtopo(_showtopo(lines))
