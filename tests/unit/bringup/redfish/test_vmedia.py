"""Virtual media helpers (pure): which slot is a CD, whether the inserted image is ours."""

from __future__ import annotations

from bringup.redfish.vmedia import image_matches, is_cd


def test_virtual_media_helpers():
    assert (
        is_cd({"MediaTypes": ["CD", "DVD"]})
        and is_cd({"Id": "CD1"})
        and not is_cd({"Id": "1", "MediaTypes": ["USBStick"]})
    )
    url = "http://10.0.0.1/images/ubuntu.iso"
    assert image_matches({"Image": url}, url)
    assert image_matches({"Image": "", "ImageName": "ubuntu.iso"}, url)
    assert not image_matches({"Image": "http://10.0.0.1/images/other.iso"}, url)
