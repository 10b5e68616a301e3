"""Safe YAML loading that understands Ansible's ``!vault`` tag and reports where YAML breaks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bringup.credentials import VaultText
from bringup.errors import UserError


class YamlError(UserError, ValueError):
    """Malformed YAML; the message names the file and the line."""


class _Loader(yaml.SafeLoader):
    pass


def _vault(loader: yaml.SafeLoader, node: yaml.Node) -> VaultText:
    return VaultText(loader.construct_scalar(node))  # type: ignore[arg-type]


def _unsafe(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_Loader.add_constructor("!vault", _vault)
_Loader.add_constructor("!unsafe", _unsafe)


def load_yaml_text(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlError(
            f"malformed YAML at{where}: {problem}" if where else f"malformed YAML: {problem}"
        ) from None


def load_yaml_file(path: Path) -> Any:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise YamlError(f"cannot read: {exc.strerror}") from None
    return load_yaml_text(text, str(path))
