"""Dell iDRAC 9 and 10.

- Ids are FQDDs: ``System.Embedded.1``, ``iDRAC.Embedded.1``, ``NIC.Integrated.1-1-1``.
- NetworkAdapters sit under the Chassis (older iDRAC 9 firmware: under the System too).
- The system event log is ``Managers/iDRAC.Embedded.1/LogServices/Sel/Entries``.
- FirmwareInventory lists ``Installed-*`` and ``Previous-*`` (rollback) images.
- Changes need a ready Lifecycle Controller (``DellLCService.GetRemoteServicesAPIStatus``),
  and a pending configuration job blocks further changes (``SYS011``) until it runs at a
  reboot or the job queue is cleared (``DellJobService.DeleteJobQueue``, ``JID_CLEARALL``).
- Where these live is what the Manager advertises in ``Links.Oem.Dell`` (``Jobs``,
  ``DellJobService``, ``DellLCService``); the URIs differ between firmware releases, so a
  guessed one is only tried when nothing is advertised. A check that cannot run is reported
  (``before_change`` returns why), never taken as "nothing to check".
"""

from __future__ import annotations

import re
from typing import Any

from bringup.redfish.errors import ActionFailed, NotReady, NotSupported, PendingJob, RedfishError
from bringup.redfish.messages import bmc_messages, describe_messages, link, message_id_endswith
from bringup.redfish.vendors.base import LocatedBmc, Vendor

# Job states in which a job still has to run (Dell DellJob and DMTF Job spellings).
PENDING_STATES = frozenset(
    s.lower()
    for s in (
        "New",
        "Scheduled",
        "Scheduling",
        "Downloading",
        "Downloaded",
        "Waiting",
        "ReadyForExecution",
        "Running",
        "Paused",
        "Pending",
        "Starting",
        "Suspended",
    )
)
# Message ids of refusals caused by the job queue: pending values committed, a job running.
JOB_BLOCK_IDS = ("SYS011", "RAC0679", "SUP0518", "JCP017")
CLEAR_ALL = "JID_CLEARALL"


def idrac_generation(model: Any, firmware: Any) -> str | None:
    """``iDRAC 9`` / ``iDRAC 10`` from the Manager's Model (``16G Monolithic``) or firmware."""
    if isinstance(model, str) and (m := re.search(r"(\d+)G\b", model)):
        gen = int(m.group(1))
        return {17: "iDRAC 10", 16: "iDRAC 9", 15: "iDRAC 9", 14: "iDRAC 9", 13: "iDRAC 8"}.get(gen)
    if isinstance(firmware, str) and (m := re.match(r"(\d+)\.", firmware)):
        major = int(m.group(1))
        if major == 1:
            return "iDRAC 10"
        if 3 <= major <= 7:
            return "iDRAC 9"
    return None


def job_record(doc: dict[str, Any]) -> dict[str, Any]:
    message = doc.get("Message")
    if not message and isinstance(doc.get("Messages"), list) and doc["Messages"]:
        message = (doc["Messages"][0] or {}).get("Message")
    return {
        "id": doc.get("Id"),
        "state": doc.get("JobState"),
        "type": doc.get("JobType") or (doc.get("Oem", {}).get("Dell", {}) or {}).get("JobType"),
        "name": doc.get("Name"),
        "message": message,
        "percent": doc.get("PercentComplete"),
        "start": doc.get("StartTime"),
    }


def is_pending(job: dict[str, Any]) -> bool:
    return str(job.get("state") or "").lower() in PENDING_STATES


def blocking_jobs(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pending configuration jobs: the ones that refuse further settings changes."""
    out = []
    for job in jobs:
        words = f"{job.get('type') or ''} {job.get('name') or ''}".lower()
        if is_pending(job) and ("config" in words or words.strip() == ""):
            out.append(job)
    return out


def advertised(ctx: LocatedBmc, name: str) -> str | None:
    """The URI of a Dell OEM resource (``Jobs``, ``DellLCService``...) the Manager links."""
    return link(ctx.manager, "Links", "Oem", "Dell", name)


def readiness_skipped(ctx: LocatedBmc, exc: NotSupported) -> str:
    """Why the Lifecycle Controller readiness check did not run (its call answered 404/405/501)."""
    if exc.status is None:
        return f"Lifecycle Controller readiness not checked: {exc.message}"
    if advertised(ctx, "DellLCService"):
        return (
            f"Lifecycle Controller readiness not checked: GetRemoteServicesAPIStatus answered HTTP "
            f"{exc.status} although the Manager advertises DellLCService ({exc.message})"
        )
    return (
        "Lifecycle Controller readiness not checked: the Manager advertises no DellLCService and "
        f"the usual URI answered HTTP {exc.status} (firmware without the API?)"
    )


class Dell(Vendor):
    name = "dell"

    def bmc_model(self, manager: dict[str, Any] | None) -> str | None:
        if not isinstance(manager, dict):
            return None
        model = manager.get("Model")
        gen = idrac_generation(model, manager.get("FirmwareVersion"))
        if gen and model:
            return f"{gen} ({model})"
        return gen or model

    def network_adapter_collections(self, ctx: LocatedBmc, chassis: dict[str, Any] | None) -> list[str]:
        found = super().network_adapter_collections(ctx, chassis)
        legacy = link(ctx.system, "NetworkAdapters")
        if legacy and legacy not in found:
            found.append(legacy)
        return found

    def event_log_entries(self, ctx: LocatedBmc) -> list[str]:
        return [f"{ctx.manager_path}/LogServices/Sel/Entries"] if ctx.manager_path else []

    def keep_firmware(self, entry: dict[str, Any]) -> bool:
        return not str(entry.get("Id") or "").startswith(("Previous", "Available"))

    # -- Lifecycle Controller and job queue -------------------------------------------------

    def _oem_service(self, ctx: LocatedBmc, name: str) -> str:
        if not ctx.manager_path:
            raise NotSupported(f"{ctx.url}: no iDRAC Manager found, so no {name}")
        return advertised(ctx, name) or f"{ctx.manager_path}/Oem/Dell/{name}"

    def readiness(self, ctx: LocatedBmc) -> dict[str, Any]:
        service = self._oem_service(ctx, "DellLCService")
        body = ctx.client.post(
            f"{service}/Actions/DellLCService.GetRemoteServicesAPIStatus", {}, idempotent=True
        ).body
        lc, status = body.get("LCStatus"), body.get("Status")
        return {
            "lc_status": lc,
            "rt_status": body.get("RTStatus"),
            "server_status": body.get("ServerStatus"),
            "status": status,
            "ready": lc == "Ready" and status in (None, "Ready"),
        }

    def jobs(self, ctx: LocatedBmc) -> list[dict[str, Any]]:
        if not ctx.manager_path:
            raise NotSupported(f"{ctx.url}: no iDRAC Manager found, so no job queue")
        if queue := advertised(ctx, "Jobs"):
            return [job_record(doc) for doc in ctx.client.members(queue)]
        # Nothing advertised (older firmware): the DMTF JobService the root links, then the
        # iDRAC's usual place.
        standard = link(ctx.client.get_optional(link(ctx.client.root, "JobService")), "Jobs")
        for path in (standard, f"{ctx.manager_path}/Jobs"):
            if not path:
                continue
            try:
                return [job_record(doc) for doc in ctx.client.members(path)]
            except NotSupported:
                continue
        raise NotSupported(f"{ctx.url}: this iDRAC advertises no job queue (Manager Links.Oem.Dell.Jobs)")

    def clear_jobs(self, ctx: LocatedBmc) -> str:
        service = self._oem_service(ctx, "DellJobService")
        resp = ctx.client.post(f"{service}/Actions/DellJobService.DeleteJobQueue", {"JobID": CLEAR_ALL})
        return describe_messages(resp.body) or "job queue cleared"

    def before_change(self, ctx: LocatedBmc, *, config: bool) -> list[str]:
        skipped = []
        try:
            state = self.readiness(ctx)
        except NotSupported as exc:
            state = None
            skipped.append(readiness_skipped(ctx, exc))
        if state is not None and not state["ready"]:
            raise NotReady(
                f"{ctx.url}: Lifecycle Controller not ready (LCStatus={state['lc_status']}, "
                f"ServerStatus={state['server_status']}, Status={state['status']}); the server may be in "
                "POST or running a job: wait and retry"
            )
        if config:
            try:
                blocking = blocking_jobs(self.jobs(ctx))
            except NotSupported as exc:
                skipped.append(f"job queue check not run: {exc.message}")
                return skipped
            if blocking:
                raise self._pending(ctx, blocking, None)
        return skipped

    def diagnose(self, ctx: LocatedBmc, err: RedfishError) -> RedfishError:
        body = getattr(err, "body", None)
        if not isinstance(err, ActionFailed) or isinstance(err, PendingJob):
            return err
        if not message_id_endswith(body, *JOB_BLOCK_IDS):
            return err
        try:
            jobs = self.jobs(ctx)
        except RedfishError:
            jobs = []
        blocking = blocking_jobs(jobs) or [j for j in jobs if is_pending(j)]
        said = "; ".join(m["message"] for m in bmc_messages(body))
        return self._pending(ctx, blocking, said, status=err.status)

    def _pending(
        self, ctx: LocatedBmc, jobs: list[dict[str, Any]], said: str | None, status: int | None = None
    ) -> PendingJob:
        ids = [str(j["id"]) for j in jobs if j.get("id")]
        listed = ", ".join(f"{j['id']} ({j.get('type') or j.get('name')}, {j.get('state')})" for j in jobs)
        what = f"pending configuration job(s) {listed}" if jobs else "a pending configuration job"
        why = f" (iDRAC: {said})" if said else ""
        return PendingJob(
            f"{ctx.url}: {what} block(s) changes{why}; let it run at the next reboot, or clear the job "
            "queue with `bringup bmc jobs --rack RACK --nodes NODE --clear`",
            ids,
            status=status,
        )
