"""Serial numbers nobody filled in: values firmware ships in FRU and SMBIOS fields (pure).

A placeholder is never a node's key (two boards with the same default serial would be one
node): discovery falls back on the next identity and says which value it skipped and why.
Each entry names where it is seen, so a new one is added with its evidence.
"""

from __future__ import annotations

from typing import Any

# (value as the BMC writes it, compared case-insensitively after stripping; where it is seen)
PLACEHOLDERS: tuple[tuple[str, str], ...] = (
    (
        "01234567890123456789AB",
        "AMI MegaRAC's default chassis serial (and SKU): a Gigabyte H262-Z63 captured in "
        "Cray-HPE/csm-redfish-interface-emulator mockups/Gigabyte",
    ),
    ("0123456789", "a FRU left at the board vendor's sample value (DMTF mockups, white-box boards)"),
    (
        "1234567890",
        "HPE's EnclosureChassis of an XL675d (Cray-HPE/csm-redfish-interface-emulator mockups/XL675d_A100)",
    ),
    ("To Be Filled By O.E.M.", "AMI Aptio SMBIOS default (ASRock Rack and other white-box boards)"),
    ("Default string", "AMI Aptio SMBIOS default (Supermicro, Gigabyte boards before the FRU is written)"),
    ("System Serial Number", "SMBIOS type 1 default of many BIOSes"),
    ("Chassis Serial Number", "SMBIOS type 3 default of many BIOSes"),
    ("Not Specified", "dmidecode's word for an empty SMBIOS string"),
    ("Not Available", "a BMC's word for a FRU field it could not read"),
    ("Not Applicable", "a BMC's word for a FRU field it could not read"),
    ("Unknown", "a BMC's word for a FRU field it could not read"),
    ("None", "a BMC's word for a FRU field it could not read"),
    ("N/A", "a BMC's word for a FRU field it could not read"),
    ("NA", "a BMC's word for a FRU field it could not read"),
    ("0", "an empty numeric FRU field"),
    ("", "an empty field"),
)
_BY_VALUE = {value.lower(): why for value, why in PLACEHOLDERS}
# Fill characters: all zeros (the MI200 GPUs of an HPE Cray EX235a report 00000000000000),
# spaces, dots (an Intel S2600BPB's SKU is twenty dots), Fs (an erased EEPROM), X's.
_FILL = (frozenset("0 "), frozenset(". "), frozenset("fF "), frozenset("xX "))


def placeholder_reason(value: Any) -> str | None:
    """Why ``value`` is not a real serial (a placeholder), or None when it may be one.
    Anything but a string is no serial at all."""
    if not isinstance(value, str):
        return "not reported"
    text = value.strip()
    if text.lower() in _BY_VALUE:
        return _BY_VALUE[text.lower()]
    chars = set(text)
    if any(chars <= fill for fill in _FILL):
        return "a filler value (one character repeated: zeros, dots, Fs or X's)"
    return None


def real_serial(value: Any) -> str | None:
    """``value`` stripped when it is a real serial, else None."""
    return value.strip() if placeholder_reason(value) is None else None
