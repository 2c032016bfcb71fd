"""Secrets at rest: mailbox passwords encrypted in the database with Fernet (`cryptography`).

A `SecretBox` holds one or more keys, newest first (REPLYGUARD_SECRET_KEY, comma-separated,
or REPLYGUARD_SECRET_KEY_FILE, one a line). It encrypts with the first and decrypts with any,
so a key is rotated in three moves: put the new key first, run `replyguard secrets rotate`
(every stored secret is re-encrypted with it), then drop the old key. Fernet is authenticated
encryption (AES-128-CBC with HMAC-SHA256): a token changed in the database does not decrypt.

Nothing here logs, and no error repeats a key or a plaintext: `repr` shows how many keys
there are, never one.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

HOW_TO_CONFIGURE = (
    "set REPLYGUARD_SECRET_KEY (or REPLYGUARD_SECRET_KEY_FILE, a file holding the key) to a key"
    " made by `replyguard secrets new-key`"
)


class NoSecretKey(RuntimeError):
    """A secret was to be stored or read, and no key is configured."""

    def __init__(self, doing: str = "store a password") -> None:
        super().__init__(f"refusing to {doing}: no secret key is configured; {HOW_TO_CONFIGURE}")


class SecretUnreadable(RuntimeError):
    """A stored secret does not decrypt with any configured key (a key dropped too soon, or a
    changed row)."""


def new_key() -> str:
    """A fresh random key, as REPLYGUARD_SECRET_KEY takes it."""
    return Fernet.generate_key().decode("ascii")


def valid_key(key: str) -> bool:
    try:
        Fernet(key.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        return False
    return True


class SecretBox:
    def __init__(self, keys: Sequence[str]) -> None:
        if not keys:
            raise NoSecretKey()
        self._fernet = MultiFernet([Fernet(key.encode("ascii")) for key in keys])
        self._count = len(keys)

    def __repr__(self) -> str:
        return f"SecretBox({self._count} key(s))"

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode("utf-8")).decode("ascii")

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeError):
            raise SecretUnreadable(
                "a stored secret does not decrypt with any configured key: was a key removed"
                " before `replyguard secrets rotate` ran? Put it back (after the new one), or"
                " connect the mailbox again with its password"
            ) from None

    def rotate(self, token: str) -> str:
        """The same secret encrypted with the first (newest) key."""
        try:
            return self._fernet.rotate(token.encode("ascii")).decode("ascii")
        except (InvalidToken, UnicodeError):
            raise SecretUnreadable(
                "a stored secret does not decrypt with any configured key; nothing was changed"
            ) from None
