"""The kernel log as the field prints it: /dev/kmsg records, bare pasted lines, non-English
month names and timestamp prefixes the parser does not know. Each must still show its Xid.

Lines are real where a public source has them (named per case); the Xid 79 line is the
driver's own wording (NVIDIA Xid catalog, Xid 79)."""

from __future__ import annotations

import pytest

from burnin.checks import ALL_CHECKS
from burnin.checks.base import CommandOutput, judge
from burnin.evaluate.recognise import recognise
from tests.unit.burnin.checks.test_samples import PROFILE

XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1994, GPU has fallen off the bus."


def judged(text: str):
    return judge(ALL_CHECKS["kernel_log"], CommandOutput(stdout=text), PROFILE)


def assert_xid79(text: str) -> None:
    result = judged(text)
    assert result.verdict.value == "FAIL", (result.verdict, result.findings, result.detail)
    assert any("Xid 79" in f.message and "0000:3b:00.0" in f.message for f in result.findings)
    recognised = recognise(text)
    assert recognised.tool is not None and recognised.tool.name == "dmesg / journalctl -k", recognised.reason


FORMS = {
    # /dev/kmsg: 'priority,sequence,microseconds,flags;message', then ' KEY=VALUE' dictionary
    # lines (https://www.kernel.org/doc/Documentation/ABI/testing/dev-kmsg)
    "kmsg": f"6,3963,206764201,-;nvidia 0000:3b:00.0: enabling device (0000 -> 0003)\n"
    f"4,3964,206764307,-;{XID79}\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n",
    "kmsg_alone": f"4,3964,206764307,-;{XID79}\n",
    "bare_xid79_alone": f"{XID79}\n",
    "bare_lines": f"nvidia 0000:3b:00.0: enabling device (0000 -> 0003)\n{XID79}\n"
    "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\n",
    # journald/syslog with the locale's month names (glibc's abbreviated months: de_DE 'Mär',
    # fr_FR 'févr.', es_ES 'ene', it_IT 'gen', pl_PL 'lut', ru_RU 'мар')
    "syslog_de": f"Mär 12 10:00:01 gpu01 kernel: {XID79}\n",
    "syslog_de_okt": f"Okt 02 10:00:01 gpu01 kernel: {XID79}\n",
    "syslog_de_dez": f"Dez  2 10:00:01 gpu01 kernel: {XID79}\n",
    "syslog_fr": f"févr. 12 10:00:01 gpu01 kernel: {XID79}\n",
    "syslog_fr_janv": f"janv. 03 10:00:01 gpu01 kernel: {XID79}\n",
    "syslog_es": f"ene 12 10:00:01 gpu01 kernel: {XID79}\ndic 12 10:00:02 gpu01 kernel: nvidia-modeset: Unloading\n",
    "syslog_ru": f"мар 12 10:00:01 gpu01 kernel: {XID79}\n",
    "dmesg_T_de": f"[Di Mär 12 10:00:01 2024] {XID79}\n",
    # journalctl -o short-precise / short-iso / short-iso-precise
    "short_precise": f"Jan 01 00:00:00.123456 gpu01 kernel: {XID79}\n",
    "short_iso": f"2024-01-01T00:00:00+0100 gpu01 kernel: {XID79}\n",
    "iso_no_t_no_zone": f"2024-01-01 00:00:00 {XID79}\n",
    "iso_utc_z": f"2024-01-01T00:00:00.123Z gpu01 kernel: {XID79}\n",
    # prefixes no list holds: a collector's own stamp, a rsyslog template, a ticket's paste
    "unknown_slashes": f"2024/01/01 00:00:00 gpu01 kernel: {XID79}\n",
    "unknown_epoch": f"1704067200.123 gpu01 {XID79}\n",
    "unknown_bracket_host": f"<gpu01> 12.03. 10:00 {XID79}\n",
}


@pytest.mark.parametrize("form", FORMS)
def test_an_xid79_is_seen_in_every_form(form: str) -> None:
    assert_xid79(FORMS[form])


def test_kmsg_dictionary_lines_are_not_part_of_the_message() -> None:
    from burnin.parsers.kernel_log import XidEvent, parse_kernel_log

    (xid,) = [e for e in parse_kernel_log(FORMS["kmsg"]) if isinstance(e, XidEvent)]
    assert xid.detail == "GPU has fallen off the bus."
    assert xid.uptime_s == pytest.approx(206.764307)
    assert xid.level == "warn"


def test_foreign_text_with_one_kernel_line_is_still_not_a_kernel_log() -> None:
    text = "\n".join(f"GPU 0000:{i:02x}:00.0 temperature {40 + i} C" for i in range(8)) + f"\n{XID79}\n"
    assert recognise(text).tool is None or recognise(text).tool.name != "dmesg / journalctl -k"
