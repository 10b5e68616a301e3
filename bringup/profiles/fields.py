"""The strict field types and the closed section every hardware profile (and delivery order) is
built from: a typo is an error with the project's wording, never a default or a coerced value
(``count: true`` is not 1, ``rate_gbps: "400"`` is not 400). The profile's own sections are in
``bringup/profiles/model.py``."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError


def strict(
    *types: type,
    gt: float | None = None,
    ge: float | None = None,
    le: float | None = None,
    choices: tuple[str, ...] = (),
) -> BeforeValidator:
    """Type and range check with the project's wording (``must be int, got str 'eight'``).

    Runs before pydantic's own validation, so a bool is never taken for a count and a string
    never for a number. The same limits go into ``Field`` for the JSON Schema."""
    want = " or ".join(t.__name__ for t in types)

    def check(value: Any) -> Any:
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise PydanticCustomError(
                "wrong_type",
                "must be {want}, got {got} {value}",
                {"want": want, "got": type(value).__name__, "value": repr(value)},
            )
        if choices and value not in choices:
            raise PydanticCustomError(
                "not_a_choice",
                "must be one of {choices}, got {value}",
                {"choices": ", ".join(choices), "value": repr(value)},
            )
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return value
        if gt == 0 and le == 1 and not 0 < value <= 1:
            raise PydanticCustomError(
                "not_a_fraction", "is a fraction and must be in (0, 1], got {value}", {"value": str(value)}
            )
        if ge is not None and le is not None and not ge <= value <= le:
            raise PydanticCustomError(
                "out_of_range",
                "must be from {ge} to {le}, got {value}",
                {"ge": ge, "le": le, "value": str(value)},
            )
        if gt == 0 and value <= 0:
            raise PydanticCustomError("not_positive", "must be positive, got {value}", {"value": str(value)})
        if ge == 0 and value < 0:
            raise PydanticCustomError("negative", "must not be negative, got {value}", {"value": str(value)})
        if le is not None and value > le:
            raise PydanticCustomError(
                "too_big", "must be at most {le}, got {value}", {"le": le, "value": str(value)}
            )
        return value

    return BeforeValidator(check)


def strict_list(value: Any) -> Any:
    if not isinstance(value, list):
        raise PydanticCustomError(
            "wrong_type",
            "must be list, got {got} {value}",
            {"got": type(value).__name__, "value": repr(value)},
        )
    return value


def regexes(value: tuple[str, ...]) -> tuple[str, ...]:
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise PydanticCustomError(
                "bad_regex",
                "{pattern} is not a regular expression: {why}",
                {"pattern": repr(pattern), "why": str(exc)},
            ) from None
    return value


def ca_type_names(value: tuple[str, ...]) -> tuple[str, ...]:
    """HCA CA types as ibstat and sysfs print them: one word each ('MT4131')."""
    for name in value:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise PydanticCustomError(
                "bad_ca_type",
                "{name} is not a CA type (one word, as ibstat prints 'CA type: MT4131')",
                {"name": repr(name)},
            )
    return value


Str = Annotated[str, strict(str)]
Bool = Annotated[bool, strict(bool)]
PositiveInt = Annotated[int, Field(gt=0), strict(int, gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0), strict(int, ge=0)]
PositiveNumber = Annotated[float, Field(gt=0), strict(int, float, gt=0)]
NonNegativeNumber = Annotated[float, Field(ge=0), strict(int, float, ge=0)]
Fraction = Annotated[float, Field(gt=0, le=1), strict(int, float, gt=0, le=1)]
Percent = Annotated[float, Field(gt=0, le=100), strict(int, float, gt=0, le=100)]
StrList = Annotated[tuple[Str, ...], BeforeValidator(strict_list)]
# ib.ca_types (bringup/profiles/model.py, which is at the size limit: the description lives here).
CaTypes = Annotated[
    StrList,
    AfterValidator(ca_type_names),
    Field(
        description='CA types of the compute fabric\'s HCAs, as ibstat prints "CA type" and sysfs '
        "/sys/class/infiniband/<dev>/hca_type gives it (MT and the PCI device id in decimal: ConnectX-7 "
        "MT4129, ConnectX-8 MT4131). Ports of the link layer on other HCAs (a storage ConnectX at 100 "
        "Gb/s) are listed, neither counted nor judged; a port whose CA type is unknown is judged "
        "(docs/platforms.md). Empty: every HCA of the link layer is the compute fabric, and "
        "ib.hca_count counts them all."
    ),
]


class Section(BaseModel):
    """A mapping in the profile: closed (unknown keys are errors), immutable, nulls mean unset."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    @model_validator(mode="before")
    @classmethod
    def _prepare(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        # ``vbios:`` with no value is "not pinned": the field's default, or "missing" if required.
        data = {k: v for k, v in data.items() if v is not None}
        # A required section that is absent is checked as empty, so each required key in it is
        # reported by its full name (``ib.rate_gbps: missing``), not only ``ib: missing``.
        for name, info in cls.model_fields.items():
            if (
                info.is_required()
                and isinstance(info.annotation, type)
                and issubclass(info.annotation, Section)
            ):
                data.setdefault(name, {})
        return data
