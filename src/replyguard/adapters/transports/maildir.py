"""A Maildir outbox: each sent email is a real `.eml` file a person can open.

Delivery is idempotent by send key: the file is written under `tmp/` and hard-linked into
`new/` under a name derived from the key; a second link fails, so a retry can never leave a
second copy. `probe` can therefore always tell whether a message went out.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.domain.outgoing import OutgoingEmail, message_bytes


class MaildirTransport:
    can_probe = True

    def __init__(self, root: Path) -> None:
        self.root = root
        for sub in ("tmp", "new", "cur"):
            (root / sub).mkdir(parents=True, exist_ok=True)

    def _name(self, email: OutgoingEmail) -> str:
        return f"rg.{email.send_key}.eml"

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        name = self._name(email)
        final = self.root / "new" / name
        if final.exists() or (self.root / "cur" / name).exists():
            return Delivery(Outcome.ACCEPTED, "already in the outbox", ref=str(final))
        tmp = self.root / "tmp" / f"{name}.{os.getpid()}"
        try:
            data = message_bytes(email)
            with tmp.open("wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            if before_commit is not None:
                before_commit()
            try:
                os.link(tmp, final)
            except FileExistsError:
                return Delivery(Outcome.ACCEPTED, "already in the outbox", ref=str(final))
        except OSError as exc:
            return Delivery(Outcome.TRANSIENT, f"maildir write failed: {exc}")
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return Delivery(Outcome.ACCEPTED, "written", ref=str(final))

    def probe(self, email: OutgoingEmail) -> Probe:
        name = self._name(email)
        if (self.root / "new" / name).exists() or (self.root / "cur" / name).exists():
            return Probe.SENT
        return Probe.NOT_SENT

    def close(self) -> None:
        return None


class NullTransport:
    """Accepts everything and keeps nothing: for benchmarks of the guarded send path."""

    can_probe = False

    def __init__(self) -> None:
        self.count = 0

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        if before_commit is not None:
            before_commit()
        self.count += 1
        return Delivery(Outcome.ACCEPTED, "null transport")

    def probe(self, email: OutgoingEmail) -> Probe:
        return Probe.UNKNOWN

    def close(self) -> None:
        return None
