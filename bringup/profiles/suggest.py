"""Which hardware profile the BMC's GPU list fits (pure), and whether a node's own profile fits.

Discovery records the GPUs the BMC lists (``Node.hardware["gpus"]``, docs/redfish.md) and the
system's model (``hardware["system"]["model"]``). A profile names its GPU as nvidia-smi prints
it (``gpu.model``, ``gpu.count``; docs/platforms.md); BMCs write the same name with underscores
or hyphens (iLO's ``NVIDIA_A100-SXM4-40GB``), so names are compared by :func:`model_words`.

- :func:`suggest`: the profiles whose model and count the BMC's list fits exactly, with why
  ("8 x NVIDIA H100 80GB HBM3 -> h100-sxm-8x400g"), or none with why.
- :func:`mismatch`: why a node's inventory profile is for other hardware (none of the BMC's GPUs
  is of the profile's model), or None. A count that differs on the right model is not a wrong
  profile but a fault: burn-in judges it slot by slot (burnin/accept/bmc_gpus.py, nvidia-smi).
  A BMC that lists no GPU gives nothing to compare, and nothing is refused.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bringup.profiles.load import load_profile
from bringup.profiles.model import Profile

# Words every GPU name shares that say nothing about which GPU it is: not a "nearest" hint.
_VENDOR_WORDS = frozenset({"nvidia", "amd", "instinct", "tesla"})


def model_words(text: Any) -> str:
    """A GPU model as compared: lower case, runs of spaces, underscores and hyphens made one
    space (iLO writes ``NVIDIA_A100-SXM4-40GB`` where nvidia-smi writes ``NVIDIA A100-SXM4-40GB``)."""
    return re.sub(r"[\s_-]+", " ", str(text or "")).strip().lower()


def is_model(listed: Any, wanted: Any) -> bool:
    """The BMC's name ``listed`` is the profile's model ``wanted``: its words, whole, in order
    (``NVIDIA B200`` is not ``NVIDIA GB200``; a BMC may add words such as a form factor)."""
    want = model_words(wanted)
    return bool(want) and f" {want} " in f" {model_words(listed)} "


@dataclass(frozen=True)
class Listed:
    """The GPUs a BMC lists: how many of each model, as the BMC wrote it (None: no model)."""

    models: tuple[tuple[str | None, int], ...]
    system_model: str | None = None

    @property
    def count(self) -> int:
        return sum(n for _, n in self.models)

    def text(self) -> str:
        """ "8 x NVIDIA H100 80GB HBM3", or "7 x A + 1 x B" for a mixed list."""
        return " + ".join(f"{n} x {m or 'GPU without a model'}" for m, n in self.models)

    def of(self, wanted: str) -> int:
        """How many of the listed GPUs are of the model ``wanted``."""
        return sum(n for m, n in self.models if m is not None and is_model(m, wanted))


@dataclass(frozen=True)
class Suggestion:
    """The profiles the BMC's GPUs fit (empty: none), and why; ``compared`` is False when the
    BMC listed no GPU, so nothing was compared."""

    profiles: tuple[str, ...]
    why: str
    compared: bool = True


def listed_gpus(hardware: Mapping[str, Any]) -> Listed | None:
    """The GPUs discovery recorded, grouped by model; None when the BMC listed none."""
    gpus = [g for g in hardware.get("gpus") or [] if isinstance(g, Mapping)]
    if not gpus:
        return None
    counted = Counter(g.get("model") or None for g in gpus)
    models = tuple(sorted(counted.items(), key=lambda mn: (-mn[1], str(mn[0]))))
    system = hardware.get("system")
    system_model = system.get("model") if isinstance(system, Mapping) else None
    return Listed(models, system_model if isinstance(system_model, str) and system_model else None)


def expects(profile: Profile) -> str:
    """What a profile expects the BMC to list: "8 x NVIDIA H100 80GB HBM3"."""
    return f"{profile.gpu.count} x {profile.gpu.model}"


def _no_gpu_list(hardware: Mapping[str, Any]) -> str:
    unavailable = hardware.get("unavailable")
    why = unavailable.get("gpus") if isinstance(unavailable, Mapping) else None
    if "gpus" not in hardware and not why:
        return "no GPU list from the BMC (not discovered, or discovered before GPUs were read)"
    return f"the BMC lists no GPU ({why})" if why else "the BMC lists no GPU"


def _nearest(listed: Listed, profiles: Mapping[str, Profile]) -> list[str]:
    """Profiles whose GPU shares a model word with the listed ones beyond the vendor's (the
    A100 80 GB profile for a 40 GB A100), for the operator to read, never to pick."""
    words = {w for m, _ in listed.models for w in model_words(m).split()} - _VENDOR_WORDS
    return [
        f"{name} ({expects(p)})"
        for name, p in sorted(profiles.items())
        if words & (set(model_words(p.gpu.model).split()) - _VENDOR_WORDS)
    ]


def suggest(hardware: Mapping[str, Any], profiles: Mapping[str, Profile]) -> Suggestion:
    """The profiles whose ``gpu.model`` every listed GPU is and whose ``gpu.count`` the BMC lists."""
    listed = listed_gpus(hardware)
    if listed is None:
        return Suggestion((), f"{_no_gpu_list(hardware)}: nothing to suggest a profile from", False)
    seen = f"{listed.system_model}: {listed.text()}" if listed.system_model else listed.text()
    fits = tuple(
        name for name, p in sorted(profiles.items()) if listed.of(p.gpu.model) == listed.count == p.gpu.count
    )
    if fits:
        return Suggestion(fits, f"{seen} -> {', '.join(fits)}")
    same_model = [(n, p) for n, p in sorted(profiles.items()) if listed.of(p.gpu.model) == listed.count]
    if same_model:
        counts = ", ".join(f"{n} has {p.gpu.count}" for n, p in same_model)
        return Suggestion((), f"{seen} -> no profile: none has {listed.count} of them ({counts})")
    if len(listed.models) > 1:
        return Suggestion((), f"{seen} -> no profile: the BMC lists more than one model")
    nearest = _nearest(listed, profiles)
    hint = f" (nearest: {'; '.join(nearest)})" if nearest else ""
    return Suggestion((), f"{seen} -> no profile: none names this GPU{hint}")


def mismatch(
    node: str,
    hardware: Mapping[str, Any],
    profile_name: str,
    profile: Profile,
    profiles: Mapping[str, Profile] | None = None,
    go_on: str = "pass --force to go on",
) -> str | None:
    """Why ``node``'s profile is for other hardware than its BMC lists, naming both; None when
    it fits, or when the BMC listed no GPU (nothing to compare). ``go_on``: how the command
    lets an operator go on anyway (a BMC that names a GPU in some other way)."""
    listed = listed_gpus(hardware)
    if listed is None or listed.of(profile.gpu.model) > 0:
        return None
    if all(m is None for m, _ in listed.models):
        return None  # GPUs without a model: nothing to compare a name with
    why = f"node {node}: the BMC lists {listed.text()}; its profile {profile_name} expects {expects(profile)}"
    found = suggest(hardware, profiles).profiles if profiles else ()
    instead = f" (the BMC's GPUs fit {', '.join(found)})" if found else ""
    return f"{why}{instead}: set the host's profile in the inventory (or {go_on})"


def report(
    node: str, hardware: Mapping[str, Any], profile_name: str, profiles: Mapping[str, Profile]
) -> dict[str, Any]:
    """What ``bringup nodes show`` and ``bringup discover`` print and write as
    ``profile_from_bmc``: the suggestion, and the mismatch with the node's own profile if any;
    ``line`` is the one line of text."""
    found = suggest(hardware, profiles)
    own = profiles.get(profile_name)
    wrong = mismatch(node, hardware, profile_name, own, profiles) if own is not None else None
    line = found.why
    if wrong and own is not None:
        line += f"; its profile {profile_name} expects {expects(own)}: configure and burn-in refuse it"
    return {
        "profiles": list(found.profiles),
        "why": found.why,
        "compared": found.compared,
        "mismatch": wrong,
        "line": line,
    }


def shipped_profiles(profiles_dir: Path) -> dict[str, Profile]:
    """Every valid profile in ``profiles_dir`` by name (the edge: reads files); one that does
    not load is left out, as ``bringup inventory validate`` reports it."""
    out: dict[str, Profile] = {}
    for path in sorted(profiles_dir.glob("*.yml")):
        profile, _ = load_profile(path.stem, profiles_dir)
        if profile is not None:
            out[path.stem] = profile
    return out
