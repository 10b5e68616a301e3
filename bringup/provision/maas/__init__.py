"""The MAAS backend: provision a rack through a MAAS region's REST API 2.0.

Per node, driven by the machine's MAAS status so that a second run resumes where the first
stopped: find the machine by MAC (or create it with its MACs and Redfish power parameters),
commission it, wait for Ready, allocate it, deploy it with the distro series and the node's
own cloud-init user data, wait for Deployed, tag it. MAAS's own message (``status_message``,
a 409 or 400 body) becomes the node's failure reason.

The API key (``consumer:token:secret``) comes from a credentials reference (``maas_api_key``),
BMC passwords from each node's ``bmc_password`` reference. Neither ever goes into a log line,
a progress line, an outcome or an exception: every message passes through a redactor.

Rack vars: ``provisioner: maas``, ``maas_url``, ``maas_api_key``, ``maas_distro_series``
(jammy), ``maas_tags`` (list), ``maas_poll_interval_s``, ``maas_commission_timeout_s``,
``maas_deploy_timeout_s``, ``maas_user_data`` (a Jinja2 template path), ``maas_architecture``
(amd64/generic); the user data also reads ``ssh_authorized_keys`` and ``ntp_servers``.

Modules, each with one job:

- ``status``: MAAS machine statuses, their names, lifecycle state and the next step (pure);
- ``client``: the API key, OAuth 1.0 PLAINTEXT signing, the HTTP client and ``MaasError``;
- ``redact``: the redactor that keeps secrets out of every message;
- ``settings``: the rack vars read and checked into ``MaasSettings``;
- ``userdata``: the per-node cloud-init user data;
- ``context``: ``RunContext``, what one node's run needs from the backend that starts it;
- ``node``: one node's way through MAAS, driven by its status;
- ``backend``: ``MaasBackend``, the ProvisionBackend (preflight, plan, concurrent provision).
"""

from bringup.provision.maas.backend import MaasBackend
from bringup.provision.maas.client import ApiKey, MaasClient, MaasError, api_base, error_text, oauth_header
from bringup.provision.maas.redact import Redactor
from bringup.provision.maas.settings import DEFAULTS, TAG_NAME, MaasSettings, settings_from_vars
from bringup.provision.maas.status import (
    COMMISSION_PHASE,
    DEPLOY_PHASE,
    OWNED,
    STATUS_NAMES,
    M,
    MaasStatus,
    lifecycle_state,
    next_step,
    status_name,
)
from bringup.provision.maas.userdata import render_user_data, ssh_keys

__all__ = [
    "COMMISSION_PHASE",
    "DEFAULTS",
    "DEPLOY_PHASE",
    "OWNED",
    "STATUS_NAMES",
    "TAG_NAME",
    "ApiKey",
    "M",
    "MaasBackend",
    "MaasClient",
    "MaasError",
    "MaasSettings",
    "MaasStatus",
    "Redactor",
    "api_base",
    "error_text",
    "lifecycle_state",
    "next_step",
    "oauth_header",
    "render_user_data",
    "settings_from_vars",
    "ssh_keys",
    "status_name",
]
