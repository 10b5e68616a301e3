"""Hardware profiles: read, validate, look up by name, and override with ``--set``.

A profile is ``inventories/profiles/<name>.yml``; its keys, types, limits, defaults and their
sources are the typed model in ``bringup/profiles/model.py`` (docs/design.md, idea 5). Validation is
pure and returns every problem at once, each naming the file and the dotted field, as
``bringup inventory check`` prints them.

    python -m bringup.profiles.load --schema > bringup/schemas/profile.schema.json

regenerates the JSON Schema shipped for editors (a unit test fails while it is stale).
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from bringup.core.errors import BadInput, UserError
from bringup.core.problems import Problem
from bringup.core.yamlio import YamlError, load_yaml_file
from bringup.profiles.model import BOOT_MODES, LINK_LAYERS, Profile

__all__ = [
    "BOOT_MODES",
    "LINK_LAYERS",
    "Profile",
    "ProfileError",
    "apply_overrides",
    "find_profile",
    "load_profile",
    "parse_profile",
    "profile_path",
    "validate_profile",
]

SCHEMA_FILE = Path(__file__).parent.with_name("schemas") / "profile.schema.json"


class ProfileError(UserError):
    """A profile that cannot be found or is not valid."""


# -- validation -----------------------------------------------------------------------------------


def _dotted(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _keys_at(loc: Sequence[str | int]) -> list[str]:
    """The keys the model has where ``loc`` points (for "did you mean")."""
    model: Any = Profile
    for part in loc:
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return []
        candidates = [field.annotation, *get_args(field.annotation)]
        model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            return []
    return list(model.model_fields)


def _message(error: Any) -> str:
    kind, value = error["type"], error.get("input")
    if kind == "missing":
        return "missing"
    if kind == "extra_forbidden":
        loc = error["loc"]
        near = difflib.get_close_matches(str(loc[-1]), _keys_at(loc[:-1]), n=1)
        hint = f"did you mean {_dotted([*loc[:-1], near[0]])}?" if near else "not in the profile schema"
        return f"unknown key ({hint})"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"must be a mapping, got {type(value).__name__} {value!r}"
    if kind == "too_short":
        return "must not be empty"
    return str(error["msg"])


def problems_from(exc: ValidationError, file: str) -> list[Problem]:
    """pydantic's errors as Problems naming the file and the dotted field."""
    return [
        Problem(file, None, _dotted(e["loc"]) or None, _message(e)) for e in exc.errors(include_url=False)
    ]


def parse_profile(
    data: Any, file: str, expected_name: str | None = None
) -> tuple[Profile | None, list[Problem]]:
    """A profile from its YAML data (pure): (profile or None, every problem)."""
    if not isinstance(data, dict):
        return None, [Problem(file, None, None, "a profile must be a YAML mapping")]
    problems: list[Problem] = []
    profile: Profile | None = None
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        problems = problems_from(exc, file)
    name = data.get("name")
    if expected_name and isinstance(name, str) and name != expected_name:
        problems.append(Problem(file, None, "name", f"is {name!r} but the file is named {expected_name!r}"))
    return (None if problems else profile), problems


def validate_profile(data: Any, path: str, expected_name: str | None = None) -> list[Problem]:
    """Every problem with a profile's content (pure)."""
    return parse_profile(data, path, expected_name)[1]


# -- reading ----------------------------------------------------------------------------------------


def profile_path(name: str, profiles_dir: Path) -> Path:
    return profiles_dir / f"{name}.yml"


def load_profile(name: str, profiles_dir: Path) -> tuple[Profile | None, list[Problem]]:
    """Read and validate one profile; returns (profile or None, problems)."""
    path = profile_path(name, profiles_dir)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in profiles_dir.glob("*.yml"))) or "none"
        return None, [
            Problem(str(path), None, None, f"unknown profile {name!r} (profiles in {profiles_dir}: {known})")
        ]
    try:
        data = load_yaml_file(path)
    except YamlError as exc:
        return None, [Problem(str(path), None, None, str(exc))]
    profile, problems = parse_profile(data, str(path), expected_name=name)
    return (profile.at(path) if profile is not None else None), problems


def find_profile(name_or_path: str, profiles_dir: Path) -> Profile:
    """A profile by name (in ``profiles_dir``) or by the path of its .yml file."""
    path = Path(name_or_path)
    if path.suffix in (".yml", ".yaml") or os.sep in name_or_path:
        if not path.is_file():  # a path, not a name: never looked up as NAME.yml
            raise ProfileError(
                f"{name_or_path}: no such profile file (give a profile's name, or the path of its .yml file)"
            )
        profile, problems = load_profile(path.stem, path.parent)
    else:
        profile, problems = load_profile(name_or_path, profiles_dir)
    if profile is None:
        raise ProfileError("; ".join(str(p) for p in problems))
    return profile


# -- overrides ----------------------------------------------------------------------------------------


def apply_overrides(profile: Profile, overrides: Sequence[str]) -> Profile:
    """A copy of the profile with ``--set key.path=value`` items applied (values are YAML),
    validated again. A bad item raises BadInput naming the key and what is wrong with it."""
    if not overrides:
        return profile
    # Only what the profile states (not the defaults), so "set in the profile" stays true.
    data = profile.model_dump(mode="json", exclude_unset=True)
    for item in overrides:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise BadInput(f"--set {item!r}: expected KEY=VALUE, e.g. diag.stress_minutes=0.5")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            why = getattr(exc, "problem", None) or type(exc).__name__
            raise BadInput(f"--set {key}: the value {raw!r} is not YAML ({why})") from None
        node = data
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1]):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise BadInput(f"--set {key}: {'.'.join(parts[: depth + 1])} is a value, not a section")
        node[parts[-1]] = value
    changed, problems = parse_profile(data, f"{profile.path} with --set")
    if changed is None:
        raise BadInput("; ".join(f"--set {p.field or key}: {p.message}" for p in problems))
    return changed.at(profile.path)


# -- the shipped JSON Schema --------------------------------------------------------------------------


def json_schema() -> str:
    """The JSON Schema of a profile, as shipped in bringup/schemas/profile.schema.json."""
    return json.dumps(Profile.model_json_schema(), indent=2) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args != ["--schema"]:
        print(
            "usage: python -m bringup.profiles.load --schema > bringup/schemas/profile.schema.json",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write(json_schema())
    return 0


if __name__ == "__main__":
    sys.exit(main())
