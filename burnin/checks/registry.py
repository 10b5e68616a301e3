"""Every check, registered where it is defined.

A check module decorates each check class with ``@register``; importing burnin.checks (which
imports every check module, one line each) fills ``REGISTRY`` in the order the checks are
defined. The stages, `burnin health` and `burnin evaluate` read the checks' own declarations
(burnin.checks.base.Check: stages, service, reads, judges) from here: a new check is its class
and nothing else (the one-off scan and the daemon of gpud loop over one list the same way:
https://github.com/leptonai/gpud/blob/main/components/all/all.go).

A decorator, not ``__init_subclass__``: a test's stand-in check (a subclass built for one test)
must not join the checks every stage runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from burnin.checks.base import Check, Service

C = TypeVar("C", bound=type[Check])


class Registry:
    """Check name -> the check (one instance: checks keep no state), in registration order."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def register(self, cls: C) -> C:
        """Register ``cls`` (a class decorator); a malformed declaration fails at import."""
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"{cls.__qualname__}: a registered check has a name (name = '...')")
        if name in self._checks:
            raise ValueError(f"check {name!r} registered twice ({cls.__qualname__})")
        for field in ("stages", "reads", "judges"):
            value = getattr(cls, field)
            if not isinstance(value, tuple) or not all(isinstance(v, str) and v for v in value):
                raise TypeError(f"{name}: {field} is a tuple of names, got {value!r}")
        if not isinstance(cls.service, Service):
            raise TypeError(f"{name}: service is a Service, got {cls.service!r}")
        self._checks[name] = cls()
        return cls

    def __iter__(self) -> Iterator[Check]:
        return iter(tuple(self._checks.values()))

    def __len__(self) -> int:
        return len(self._checks)

    def get(self, name: str) -> Check | None:
        return self._checks.get(name)

    def stage_run(self) -> dict[str, Check]:
        """The checks some stage runs, by name: burnin.checks.ALL_CHECKS."""
        return {c.name: c for c in self if c.stages}

    def evaluate_only(self) -> dict[str, Check]:
        """The checks only `burnin evaluate` applies: burnin.checks.EVIDENCE_CHECKS."""
        return {c.name: c for c in self if not c.stages}

    def in_service(self, *, on_request: bool = False) -> list[Check]:
        """The checks `burnin health` runs (and those it runs only when asked, if ``on_request``)."""
        wanted = {Service.ALWAYS, *([Service.ON_REQUEST] if on_request else [])}
        return [c for c in self if c.service in wanted]

    def readers(self, tool: str) -> tuple[str, ...]:
        """The checks that judge the output of ``tool`` (a burnin.evaluate.markers name)."""
        return tuple(c.name for c in self if tool in c.reads)


REGISTRY = Registry()
register = REGISTRY.register
