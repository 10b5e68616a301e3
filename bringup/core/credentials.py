"""Credential references: an inventory names where a secret lives, never the secret itself.

    bmc_password: env:R01_BMC_PASSWORD          # an environment variable
    bmc_password: file:/etc/bringup/r01.pass    # a file readable by its owner only (mode 0600)
    bmc_password: !vault |                      # an Ansible Vault encrypted string
        $ANSIBLE_VAULT;1.1;AES256 ...

A relative ``file:`` path is taken relative to the inventory file. Resolving a reference is
the only place the secret is read; the secret never goes into an error message.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from bringup.core.errors import UserError

HOW_TO_REFERENCE = (
    "reference the secret instead of writing it: 'env:VARIABLE', 'file:/path/to/secret' (mode 0600), "
    "or an Ansible Vault value (ansible-vault encrypt_string)"
)

# Keys whose values are secrets wherever they appear in an inventory: ending in a password,
# secret, token or API key word (``*_pw`` too), or holding ``credential``, ``auth`` (not
# ``author``/``authorized``: ``ssh_authorized_keys`` are public keys) or ``ipmi_...pass``.
SECRET_KEY = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|api_?key|(^|_)pw)$|credential|auth(?!or)|^ipmi_.*pass",
    re.IGNORECASE,
)


class CredentialError(UserError, ValueError):
    """A reference that cannot be used; the message never contains the secret."""


@dataclass(frozen=True)
class VaultText:
    """An ``!vault`` tagged scalar, kept encrypted until it is resolved."""

    ciphertext: str

    def __repr__(self) -> str:
        return "VaultText(<encrypted>)"


@dataclass(frozen=True)
class CredentialRef:
    kind: str  # "env", "file" or "vault"
    target: str  # variable name, absolute file path, or the vault ciphertext

    def __str__(self) -> str:
        return "vault:<encrypted>" if self.kind == "vault" else f"{self.kind}:{self.target}"


def parse_ref(value: object, base_dir: Path | None = None) -> CredentialRef:
    """Turn an inventory value into a reference, or raise saying how to write one."""
    if isinstance(value, VaultText):
        return CredentialRef("vault", value.ciphertext)
    if not isinstance(value, str) or not value:
        raise CredentialError(f"not a credential reference; {HOW_TO_REFERENCE}")
    if value.startswith("env:"):
        name = value[4:]
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise CredentialError(f"'env:' needs an environment variable name, got {name!r}")
        return CredentialRef("env", name)
    if value.startswith("file:"):
        raw = value[5:]
        if not raw:
            raise CredentialError("'file:' needs a path")
        path = Path(raw).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        return CredentialRef("file", str(path.resolve()))
    if value.lstrip().startswith("$ANSIBLE_VAULT;"):
        return CredentialRef("vault", value)
    raise CredentialError(f"plaintext password in inventory; {HOW_TO_REFERENCE}")


def write_secret_file(path: Path, text: str) -> None:
    """Write a secret readable by its owner only (0600, also when the file already existed)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)


def file_problem(ref: CredentialRef) -> str | None:
    """Why a ``file:`` reference cannot be used (missing, or readable by others), or None."""
    path = Path(ref.target)
    try:
        st = path.stat()
    except FileNotFoundError:
        return f"credential file {path} does not exist"
    except PermissionError:
        return f"credential file {path} cannot be read"
    if not stat.S_ISREG(st.st_mode):
        return f"credential file {path} is not a regular file"
    if st.st_mode & 0o077:
        return f"credential file {path} has mode {stat.S_IMODE(st.st_mode):04o}; it must be 0600 (chmod 600 {path})"
    return None


def resolve(ref: CredentialRef, vault_password_file: str | None = None) -> str:
    """Read the secret a reference points at."""
    if ref.kind == "env":
        value = os.environ.get(ref.target)
        if value is None:
            raise CredentialError(f"environment variable {ref.target} is not set")
        return value
    if ref.kind == "file":
        problem = file_problem(ref)
        if problem:
            raise CredentialError(problem)
        return Path(ref.target).read_text().rstrip("\n")
    if ref.kind == "vault":
        return _decrypt_vault(ref.target, vault_password_file)
    raise CredentialError(f"unknown credential kind {ref.kind!r}")


def _decrypt_vault(ciphertext: str, vault_password_file: str | None) -> str:
    password_file = vault_password_file or os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
    if not password_file:
        raise CredentialError(
            "an Ansible Vault value needs ANSIBLE_VAULT_PASSWORD_FILE (or --vault-password-file)"
        )
    from ansible.parsing.vault import VaultLib, VaultSecret

    secret = VaultSecret(Path(password_file).read_bytes().strip())
    try:
        return VaultLib([("default", secret)]).decrypt(ciphertext.strip()).decode()
    except Exception as exc:  # ansible raises AnsibleError subclasses
        raise CredentialError(f"cannot decrypt Ansible Vault value: {type(exc).__name__}") from None
