"""A problem found while validating input: where it is (file, host, field) and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    file: str
    host: str | None
    field: str | None
    message: str
    warning: bool = False

    def __str__(self) -> str:
        where = [self.file]
        if self.host:
            where.append(f"host {self.host}")
        if self.field:
            where.append(f"field {self.field}")
        level = "warning: " if self.warning else ""
        return f"{': '.join(where)}: {level}{self.message}"
