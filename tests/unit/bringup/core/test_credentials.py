from __future__ import annotations

import pytest

from bringup.core.credentials import CredentialError, CredentialRef, parse_ref, resolve


def test_env_reference(monkeypatch):
    ref = parse_ref("env:BMC_PW")
    monkeypatch.setenv("BMC_PW", "s3")
    assert resolve(ref) == "s3"
    monkeypatch.delenv("BMC_PW")
    with pytest.raises(CredentialError, match="BMC_PW is not set"):
        resolve(ref)


def test_file_reference_relative_to_inventory_and_mode(tmp_path):
    secret = tmp_path / "pw"
    secret.write_text("hunter2\n")
    secret.chmod(0o600)
    ref = parse_ref("file:pw", base_dir=tmp_path)
    assert ref == CredentialRef("file", str(secret)) and resolve(ref) == "hunter2"
    secret.chmod(0o640)
    with pytest.raises(CredentialError, match="must be 0600") as err:
        resolve(ref)
    assert "hunter2" not in str(err.value)


@pytest.mark.parametrize("value", ["calvin", "", 1234, None, "env:", "env:1BAD", "file:"])
def test_not_a_reference(value):
    with pytest.raises(CredentialError) as err:
        parse_ref(value)
    if value:
        assert str(value) not in str(err.value) or str(value).startswith(("env:", "file:"))


def test_vault_roundtrip(tmp_path):
    from ansible.parsing.vault import VaultLib, VaultSecret

    pwfile = tmp_path / "vault-pass"
    pwfile.write_text("vaultpw\n")
    cipher = VaultLib([("default", VaultSecret(b"vaultpw"))]).encrypt("bmc-secret").decode()
    ref = parse_ref(cipher)
    assert ref.kind == "vault" and "bmc-secret" not in str(ref)
    assert resolve(ref, vault_password_file=str(pwfile)) == "bmc-secret"
    pwfile.write_text("wrong\n")
    with pytest.raises(CredentialError, match="cannot decrypt"):
        resolve(ref, vault_password_file=str(pwfile))
