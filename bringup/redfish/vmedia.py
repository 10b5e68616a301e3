"""Virtual media: insert an ISO by URL into the virtual CD, eject it, boot from it once.

The first node of a site has no PXE server to boot from: it boots an installer ISO that the
BMC fetches itself. The CD slot is found under the System (Redfish 2021+, iDRAC 10) or the
Manager (iDRAC 9 ``VirtualMedia/CD``, iLO ``VirtualMedia/2``).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bringup.redfish.boot import BootResult, run_prechecks, set_boot_once
from bringup.redfish.context import BmcContext
from bringup.redfish.errors import ActionFailed, NotSupported
from bringup.redfish.messages import link
from bringup.redfish.power import PowerControl, PowerOptions, PowerResult

CD_TYPES = frozenset({"CD", "DVD"})


@dataclass
class MediaState:
    path: str
    inserted: bool
    image: str | None

    def record(self) -> dict[str, Any]:
        return {"path": self.path, "inserted": self.inserted, "image": self.image}


def is_cd(doc: dict[str, Any]) -> bool:
    types = {str(t) for t in doc.get("MediaTypes") or []}
    return bool(types & CD_TYPES) or "cd" in str(doc.get("Id") or "").lower()


def image_matches(doc: dict[str, Any], url: str) -> bool:
    """Whether a VirtualMedia resource shows ``url`` (some BMCs show only the file name)."""
    name = posixpath.basename(urlsplit(url).path)
    image, image_name = doc.get("Image") or "", doc.get("ImageName") or ""
    return image == url or (bool(name) and (image_name == name or image.endswith("/" + name)))


def state_of(path: str, doc: dict[str, Any]) -> MediaState:
    return MediaState(path, doc.get("Inserted") is True, doc.get("Image") or None)


def find_cd(ctx: BmcContext) -> tuple[str, dict[str, Any]]:
    for collection in (link(ctx.system, "VirtualMedia"), link(ctx.manager, "VirtualMedia")):
        if not collection:
            continue
        try:
            members = ctx.client.members(collection)
        except NotSupported:
            continue
        for doc in members:
            if is_cd(doc) and isinstance(doc.get("@odata.id"), str):
                return doc["@odata.id"], doc
    raise NotSupported(f"{ctx.url}: no virtual CD/DVD drive")


def _action(doc: dict[str, Any], name: str) -> str | None:
    action = (doc.get("Actions") or {}).get(f"#VirtualMedia.{name}") or {}
    return action.get("target") if isinstance(action.get("target"), str) else None


def eject(ctx: BmcContext) -> MediaState:
    path, doc = find_cd(ctx)
    if doc.get("Inserted") is not True:
        return state_of(path, doc)
    target = _action(doc, "EjectMedia")
    try:
        if target:
            ctx.client.post(target, {})
        else:
            ctx.client.patch(path, {"Image": None, "Inserted": False})
    except ActionFailed as exc:
        raise ctx.vendor.diagnose(ctx, exc) from None
    after = state_of(path, ctx.client.get(path))
    if after.inserted:
        raise ActionFailed(f"{ctx.url}: the BMC accepted the eject but {path} still shows media inserted")
    return after


def insert(ctx: BmcContext, url: str) -> MediaState:
    """Insert ``url`` (read-only); a different image already inserted is ejected first."""
    run_prechecks(ctx, config=False)  # refuses here when the host requires them and one cannot run
    path, doc = find_cd(ctx)
    if doc.get("Inserted") is True and image_matches(doc, url):
        return state_of(path, doc)
    if doc.get("Inserted") is True:
        eject(ctx)
    target = _action(doc, "InsertMedia")
    body = {"Image": url, "Inserted": True, "WriteProtected": True}
    try:
        if target:
            ctx.client.post(target, body)
        else:
            ctx.client.patch(path, body)
    except ActionFailed as exc:
        raise ctx.vendor.diagnose(ctx, exc) from None
    now = ctx.client.get(path)
    after = state_of(path, now)
    if not after.inserted or not image_matches(now, url):
        raise ActionFailed(
            f"{ctx.url}: the BMC accepted the image but {path} reads back Inserted={now.get('Inserted')}, "
            f"Image={now.get('Image')!r}"
        )
    return after


def status(ctx: BmcContext) -> MediaState:
    path, doc = find_cd(ctx)
    return state_of(path, doc)


@dataclass
class IsoBoot:
    media: MediaState
    boot: BootResult
    power: PowerResult

    def record(self) -> dict[str, Any]:
        return {"media": self.media.record(), "boot": self.boot.record(), "power": self.power.record()}


def boot_from_iso(
    ctx: BmcContext, url: str, mode: str = "uefi", power: PowerOptions | None = None
) -> IsoBoot:
    """Insert the ISO, set a one-time boot from CD, and (re)start the node."""
    media = insert(ctx, url)
    boot = set_boot_once(ctx, "Cd", mode)
    started = PowerControl(ctx, power).restart()
    return IsoBoot(media, boot, started)
