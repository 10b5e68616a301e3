"""A hardware delivery's order as data: ``inventories/deliveries/<name>.yml``.

    name: example
    description: 32 HGX H100 nodes, purchase order 4500012345
    nodes:
      count: 32
      serials: [SN0001, SN0002, ...]     # the packing list (optional)
    profiles:
      h100-sxm-8x400g:                    # a hardware profile the rack's hosts name
        cpu: {model: "Xeon(R) Platinum 8480+", sockets: 2, cores: 112}
        memory: {total_gib: 2048, dimm_count: 32, dimm_size_gib: 64, dimm_speed_mts: 4800}
        gpu: {model: "NVIDIA H100 80GB HBM3", count: 8, min_vbios: 96.00.99.00.01}
        nics: [{model: ConnectX-7, count: 8, min_firmware: 28.39.1002}]
        nvme: {count: 8, model: "SAMSUNG MZQL23T8HCLS", min_capacity_gb: 3840}
        psu: {count: 6, redundancy: N+N}
        bmc: {min_version: 7.00.00.00}
        bios: {min_version: 2.19.1, attributes: {SriovGlobalEnable: Enabled}}
    acceptance:
      stages: [preflight, gpu, pcie, ib, nccl]
      soak: 72h
      soak_stages: [gpu, ib, nccl]
      min_accepted_fraction: 0.95

Every figure left out is not compared. Validation is pure (``parse_delivery``) and returns every
problem at once, each naming the file and the dotted field (``profiles.h100.memory.dimm_count``);
an unknown key is refused with a did-you-mean. Stage names are checked by ``burnin accept``
against the burn-in's stages (bringup does not know them). The comparison of an order with what
was found is ``burnin/accept/conformance.py``.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from bringup.core.errors import UserError
from bringup.core.problems import Problem
from bringup.core.yamlio import YamlError, load_yaml_file
from bringup.profiles.fields import Fraction, PositiveInt, PositiveNumber, Str, StrList

__all__ = [
    "Acceptance",
    "Bios",
    "Bmc",
    "Cpu",
    "Delivery",
    "DeliveryError",
    "Gpu",
    "Memory",
    "Nic",
    "Nodes",
    "Nvme",
    "OrderProfile",
    "Psu",
    "delivery_path",
    "load_delivery",
    "parse_delivery",
    "parse_duration",
    "read_delivery",
    "version_at_least",
    "version_key",
]

SCHEMA_FILE = Path(__file__).parent.with_name("schemas") / "delivery.schema.json"
PSU_REDUNDANCY = ("N+N", "N+1", "N")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class DeliveryError(UserError, ValueError):
    """An order file that cannot be found or is not valid; ``problems`` lists every one."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


# -- versions and durations (pure) ----------------------------------------------------------


def version_key(text: str) -> tuple[int, ...]:
    """A firmware version's numbers in order: ``96.00.74.00.01`` -> (96, 0, 74, 0, 1),
    ``iLO 5 v2.72`` -> (5, 2, 72)... the numbers are what vendors agree on; letters are dropped."""
    return tuple(int(n) for n in re.findall(r"\d+", text))


def version_at_least(found: str, minimum: str) -> bool:
    """Whether ``found`` is ``minimum`` or newer, comparing number by number (28.39.1002 <
    28.40.1000; 2.19.1 > 2.9). A version with no digits is never at least anything."""
    have, need = version_key(found), version_key(minimum)
    if not have:
        return False
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) >= need + (0,) * (width - len(need))


def parse_duration(text: Any) -> float:
    """``72h``, ``30m``, ``3d``, ``90s`` or a number of seconds -> seconds (ValueError otherwise)."""
    if isinstance(text, bool):
        raise ValueError(f"is not a duration: {text!r}")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError(f"must not be negative, got {text!r}")
        return float(text)
    match = _DURATION.match(str(text))
    if not match:
        raise ValueError(f"is not a duration like 72h, 30m, 3d or 90s: {text!r}")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def _min_version(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)  # min_version: 7 is "7", not an error
    if not isinstance(value, str) or not version_key(value):
        raise PydanticCustomError(
            "not_a_version",
            "must be a version with numbers (e.g. 28.39.1002), got {value}",
            {"value": repr(value)},
        )
    return value


def _duration(value: Any) -> Any:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise PydanticCustomError("not_a_duration", "{why}", {"why": str(exc)}) from None


def _serial_list(value: Any) -> Any:
    if not isinstance(value, list):
        raise PydanticCustomError(
            "wrong_type",
            "must be a list of serials, got {got} {value}",
            {"got": type(value).__name__, "value": repr(value)},
        )
    # Serials written as YAML numbers (a packing list pasted in) are still serials.
    return [str(v) if isinstance(v, int) and not isinstance(v, bool) else v for v in value]


def _attribute_values(value: Any) -> Any:
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "wrong_type",
            "must be a mapping of Bios attribute -> value, got {got}",
            {"got": type(value).__name__},
        )
    for key, item in value.items():
        if not isinstance(item, (str, int, float, bool)):
            raise PydanticCustomError(
                "wrong_type",
                "attribute {key} must be a string, number or boolean, got {got}",
                {"key": repr(key), "got": type(item).__name__},
            )
    return {str(k): v for k, v in value.items()}


MinVersion = Annotated[str, BeforeValidator(_min_version)]
Duration = Annotated[
    float,
    BeforeValidator(_duration),
    WithJsonSchema(
        {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": _DURATION.pattern}]}
    ),
]
Serials = Annotated[tuple[Str, ...], BeforeValidator(_serial_list)]
Attributes = Annotated[dict[str, str | int | float | bool], BeforeValidator(_attribute_values)]


# -- the model --------------------------------------------------------------------------------


class _Section(BaseModel):
    """A closed, immutable mapping; a key given with no value (``count:``) is as if not given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        return {k: v for k, v in data.items() if v is not None} if isinstance(data, dict) else data


class Nodes(_Section):
    count: PositiveInt = Field(description="Nodes ordered.")
    serials: Serials = Field(
        default=(),
        description="The chassis serials on the packing list (as Redfish reports them); empty: not compared.",
    )


class Cpu(_Section):
    model: Str | None = Field(
        default=None, description="A substring of the CPU model (Redfish Processors Model, lscpu Model name)."
    )
    sockets: PositiveInt | None = Field(default=None, description="CPU sockets populated.")
    cores: PositiveInt | None = Field(default=None, description="Physical cores, all sockets together.")


class Memory(_Section):
    total_gib: PositiveNumber | None = Field(default=None, description="Memory in all, GiB.")
    dimm_count: PositiveInt | None = Field(default=None, description="Populated DIMMs.")
    dimm_size_gib: PositiveNumber | None = Field(default=None, description="Size of every DIMM, GiB.")
    dimm_speed_mts: PositiveInt | None = Field(
        default=None, description="Slowest speed a DIMM may run at, MT/s."
    )


class Gpu(_Section):
    model: Str | None = Field(
        default=None, description='A substring of the GPU product name ("H100 80GB HBM3").'
    )
    count: PositiveInt | None = Field(default=None, description="GPUs per node.")
    min_vbios: MinVersion | None = Field(default=None, description="Oldest VBIOS accepted (nvidia-smi -q).")


class Nic(_Section):
    model: Str = Field(
        description='A substring of the adapter model (Redfish or ibstat CA type, "ConnectX-7", "MT4129").'
    )
    count: PositiveInt | None = Field(
        default=None, description="Adapters (ports for IB HCAs) of this model per node."
    )
    min_firmware: MinVersion | None = Field(default=None, description="Oldest firmware accepted.")


class Nvme(_Section):
    count: PositiveInt | None = Field(default=None, description="NVMe drives per node.")
    model: Str | None = Field(default=None, description="A substring of every drive's model.")
    min_capacity_gb: PositiveNumber | None = Field(
        default=None, description="Smallest drive accepted, GB (10^9 bytes)."
    )


class Psu(_Section):
    count: PositiveInt | None = Field(
        default=None, description="Power supplies per node, all present and healthy."
    )
    redundancy: (
        Annotated[Literal[PSU_REDUNDANCY], BeforeValidator(lambda v: _choice(v, PSU_REDUNDANCY))] | None
    ) = Field(default=None, description="N+N, N+1 or N: how many may fail with the node still powered.")


class Bmc(_Section):
    min_version: MinVersion | None = Field(default=None, description="Oldest BMC firmware accepted.")


class Bios(_Section):
    min_version: MinVersion | None = Field(default=None, description="Oldest BIOS accepted.")
    attributes: Attributes = Field(
        default_factory=dict,
        description="Redfish Bios attributes that must hold these values (SR-IOV, IOMMU/ACS, power profile).",
    )


class OrderProfile(_Section):
    """What one hardware profile's nodes were ordered with; a section left out is not compared."""

    cpu: Cpu = Field(default_factory=Cpu)
    memory: Memory = Field(default_factory=Memory)
    gpu: Gpu = Field(default_factory=Gpu)
    nics: tuple[Nic, ...] = Field(default=(), description="One entry per adapter model.")
    nvme: Nvme = Field(default_factory=Nvme)
    psu: Psu = Field(default_factory=Psu)
    bmc: Bmc = Field(default_factory=Bmc)
    bios: Bios = Field(default_factory=Bios)


class Acceptance(_Section):
    stages: Annotated[StrList, Field(min_length=1)] = Field(
        default=("preflight", "gpu", "pcie", "ib", "nccl"), description="Burn-in stages every node must pass."
    )
    soak: Duration = Field(default=0.0, description="Soak length (72h, 30m, 3d); 0: no soak.")
    soak_stages: Annotated[StrList, Field(min_length=1)] = Field(
        default=("gpu", "ib", "nccl"), description="Stages the soak repeats until it is over."
    )
    min_accepted_fraction: Fraction = Field(
        default=1.0, description="Share of the ordered nodes that must be accepted for the delivery to pass."
    )


class Delivery(_Section):
    """A validated order. ``path`` is where it was read from (not part of the YAML)."""

    model_config = ConfigDict(title="Hardware delivery (the order)")

    name: Str = Field(description="The delivery's name: its file name without .yml.")
    description: Str = Field(default="", description="The delivery in one line (vendor, purchase order).")
    nodes: Nodes
    profiles: dict[str, OrderProfile] = Field(
        min_length=1, description="Hardware profile name (as the rack's hosts name it) -> what was ordered."
    )
    acceptance: Acceptance = Field(default_factory=Acceptance)

    _path: Path | None = PrivateAttr(default=None)

    @property
    def path(self) -> Path | None:
        return self._path

    def at(self, path: Path | None) -> Delivery:
        """This order, recorded as read from ``path``."""
        copy = self.model_copy()
        copy._path = path
        return copy

    def profile(self, name: str) -> OrderProfile | None:
        return self.profiles.get(name)


def _choice(value: Any, choices: tuple[str, ...]) -> Any:
    if value not in choices:
        raise PydanticCustomError(
            "not_a_choice",
            "must be one of {choices}, got {value}",
            {"choices": ", ".join(choices), "value": repr(value)},
        )
    return value


# -- validation (pure) --------------------------------------------------------------------------


def _dotted(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _submodel(annotation: Any) -> type[BaseModel] | None:
    candidates = [annotation, *get_args(annotation)]
    for c in list(candidates):
        candidates += list(get_args(c))
    return next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)


def _keys_at(loc: tuple[str | int, ...]) -> list[str]:
    """The keys the model has where ``loc`` points (for "did you mean")."""
    model: type[BaseModel] | None = Delivery
    parts = list(loc)
    if parts[:1] == ["profiles"]:
        if len(parts) < 2:
            return []
        model, parts = OrderProfile, parts[2:]  # profiles.<name> is the profile's name, free
    for part in parts:
        if isinstance(part, int):
            continue  # a list's index: its element has the list's model
        field = model.model_fields.get(part) if model else None
        model = _submodel(field.annotation) if field else None
    return list(model.model_fields) if model else []


def _message(error: Any) -> str:
    kind, value, loc = error["type"], error.get("input"), tuple(error["loc"])
    if kind == "missing":
        return "missing"
    if kind == "extra_forbidden":
        near = difflib.get_close_matches(str(loc[-1]), _keys_at(loc[:-1]), n=1)
        hint = (
            f"did you mean {_dotted((*loc[:-1], near[0]))}?"
            if near
            else f"expected one of {', '.join(_keys_at(loc[:-1]))}"
        )
        return f"unknown key ({hint})"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"must be a mapping, got {type(value).__name__} {value!r}"
    if kind in ("tuple_type", "list_type"):
        return f"must be a list, got {type(value).__name__} {value!r}"
    if kind == "too_short":
        return "must not be empty"
    return str(error["msg"])


def _consistency(delivery: Delivery, file: str) -> list[Problem]:
    """What each field allows but the order as a whole does not."""
    problems = []
    serials = delivery.nodes.serials
    for serial, n in sorted(Counter(serials).items()):
        if n > 1:
            problems.append(Problem(file, None, "nodes.serials", f"serial {serial!r} is listed {n} times"))
    if serials and len(serials) != delivery.nodes.count:
        problems.append(
            Problem(
                file,
                None,
                "nodes.serials",
                f"the packing list names {len(serials)} serial(s) but nodes.count is {delivery.nodes.count}",
            )
        )
    for name, order in delivery.profiles.items():
        mem = order.memory
        if (
            mem.total_gib
            and mem.dimm_count
            and mem.dimm_size_gib
            and mem.dimm_count * mem.dimm_size_gib != mem.total_gib
        ):
            problems.append(
                Problem(
                    file,
                    None,
                    f"profiles.{name}.memory.total_gib",
                    f"is {mem.total_gib:g} but dimm_count x dimm_size_gib is {mem.dimm_count * mem.dimm_size_gib:g}",
                )
            )
        models = Counter(nic.model for nic in order.nics)
        for model, n in sorted(models.items()):
            if n > 1:
                problems.append(
                    Problem(file, None, f"profiles.{name}.nics", f"model {model!r} is listed {n} times")
                )
    return problems


def parse_delivery(
    data: Any, source: str, expected_name: str | None = None
) -> tuple[Delivery | None, list[Problem]]:
    """An order from its YAML data (pure): (delivery or None, every problem, one line each)."""
    if not isinstance(data, dict):
        return None, [
            Problem(
                source, None, None, "a delivery must be a YAML mapping (name, nodes, profiles, acceptance)"
            )
        ]
    try:
        delivery = Delivery.model_validate(data)
    except ValidationError as exc:
        return None, [
            Problem(source, None, _dotted(tuple(e["loc"])) or None, _message(e))
            for e in exc.errors(include_url=False)
        ]
    problems = _consistency(delivery, source)
    if expected_name and delivery.name != expected_name:
        problems.append(
            Problem(source, None, "name", f"is {delivery.name!r} but the file is named {expected_name!r}")
        )
    return (None if problems else delivery), problems


# -- reading --------------------------------------------------------------------------------------


def delivery_path(name_or_path: str, inventory_dir: Path) -> Path:
    """A delivery is a name (``lab`` -> ``inventories/deliveries/lab.yml``) or a path to its file."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yml", ".yaml") or "/" in name_or_path:
        return candidate
    return inventory_dir / "deliveries" / f"{name_or_path}.yml"


def read_delivery(
    name_or_path: str, inventory_dir: Path, profiles_dir: Path | None = None
) -> tuple[Delivery | None, list[Problem]]:
    """Read and validate an order, and check that each profile it names exists in
    ``profiles_dir`` (default ``inventory_dir/profiles``): (delivery or None, every problem)."""
    path = delivery_path(name_or_path, inventory_dir)
    if not path.is_file():
        folder = path.parent
        known = ", ".join(sorted(p.stem for p in folder.glob("*.yml"))) if folder.is_dir() else ""
        return None, [
            Problem(
                str(path),
                None,
                None,
                "no such delivery" + (f" (deliveries in {folder}: {known})" if known else ""),
            )
        ]
    try:
        data = load_yaml_file(path)
    except YamlError as exc:
        return None, [Problem(str(path), None, None, str(exc))]
    delivery, problems = parse_delivery(data, str(path), expected_name=path.stem)
    profiles_dir = profiles_dir or inventory_dir / "profiles"
    names = (
        delivery.profiles
        if delivery is not None
        else (data.get("profiles") or {})
        if isinstance(data, dict)
        else {}
    )
    if isinstance(names, dict):
        known = sorted(p.stem for p in profiles_dir.glob("*.yml")) if profiles_dir.is_dir() else []
        for name in names:
            if str(name) not in known:
                problems.append(
                    Problem(
                        str(path),
                        None,
                        f"profiles.{name}",
                        f"no hardware profile {name!r} (profiles in {profiles_dir}: {', '.join(known) or 'none'})",
                    )
                )
    if problems:
        return None, problems
    assert delivery is not None
    return delivery.at(path), []


def load_delivery(name_or_path: str, inventory_dir: Path, profiles_dir: Path | None = None) -> Delivery:
    """The order, or DeliveryError listing every problem with it (one line each)."""
    delivery, problems = read_delivery(name_or_path, inventory_dir, profiles_dir)
    if delivery is None:
        raise DeliveryError(problems)
    return delivery


# -- the shipped JSON Schema -------------------------------------------------------------------------


def json_schema() -> str:
    """The JSON Schema of an order file, as shipped in bringup/schemas/delivery.schema.json."""
    schema = Delivery.model_json_schema()
    schema["$comment"] = "Generated by `python -m bringup.inventory.delivery --schema`; do not edit."
    return json.dumps(schema, indent=2) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--schema"]:
        sys.exit(
            "usage: python -m bringup.inventory.delivery --schema > bringup/schemas/delivery.schema.json"
        )
    sys.stdout.write(json_schema())
