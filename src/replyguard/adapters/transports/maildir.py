"""A Maildir outbox: each sent email is a real `.eml` file a person can open.

Delivery is idempotent by send key: the file is written under `tmp/` and hard-linked into
`new/` under a name derived from the key; a second link fails, so a retry can never leave a
second copy. `probe` can therefore always tell whether a message went out.

Durability: the file is fsynced before the link, and the `new/` directory after it, so an
acknowledged delivery survives a power loss. A process killed mid-send leaves its file in
`tmp/` (named with the host and process id); recovery removes such leftovers once their
process is gone (`probe`, and every time the outbox is opened), never a live sender's file.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

from replyguard.adapters.transports.base import BeforeCommitHook, Delivery, Outcome, Probe
from replyguard.domain.outgoing import OutgoingEmail, message_bytes

#: A leftover from another host (a shared outbox) is only removed once it is this old.
FOREIGN_TMP_AGE = 36 * 3600  # seconds, as the Maildir specification advises


class MaildirTransport:
    can_probe = True

    def __init__(self, root: Path) -> None:
        self.root = root
        self._host = socket.gethostname().replace(".", "_").replace("/", "_") or "host"
        for sub in ("tmp", "new", "cur"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        self.clean_tmp()

    def _name(self, email: OutgoingEmail) -> str:
        return f"rg.{email.send_key}.eml"

    def send(self, email: OutgoingEmail, before_commit: BeforeCommitHook | None = None) -> Delivery:
        name = self._name(email)
        final = self.root / "new" / name
        if final.exists() or (self.root / "cur" / name).exists():
            return Delivery(Outcome.ACCEPTED, "already in the outbox", ref=str(final))
        tmp = self.root / "tmp" / f"{name}.{self._host}.{os.getpid()}"
        try:
            data = message_bytes(email)
            if email.return_path:
                # What the final delivery agent writes: the envelope sender, our signed return path.
                data = f"Return-Path: <{email.return_path}>\r\n".encode() + data
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
            # The link is the point of no return; only a synced directory makes it durable.
            _fsync_dir(final.parent)
        except OSError as exc:
            return Delivery(Outcome.TRANSIENT, f"maildir write failed: {exc}")
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return Delivery(Outcome.ACCEPTED, "written", ref=str(final))

    def probe(self, email: OutgoingEmail) -> Probe:
        self.clean_tmp(self._name(email))
        name = self._name(email)
        if (self.root / "new" / name).exists() or (self.root / "cur" / name).exists():
            return Probe.SENT
        return Probe.NOT_SENT

    def clean_tmp(self, prefix: str = "rg.") -> int:
        """Remove leftovers in `tmp/` whose writer is gone. Returns how many were removed.

        A file of this host is removed when its process no longer runs; a file of another
        host (a shared outbox) only when older than FOREIGN_TMP_AGE. A file not named by us
        is left alone."""
        removed = 0
        now = time.time()
        for path in (self.root / "tmp").glob(f"{prefix}*"):
            stem, _, pid = path.name.rpartition(".")
            if not pid.isdigit():
                continue
            try:
                if stem.rpartition(".")[2] == self._host:
                    stale = not _alive(int(pid))  # a reused pid looks alive: the safe side
                else:
                    stale = now - path.stat().st_mtime > FOREIGN_TMP_AGE
                if stale:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
        return removed

    def close(self) -> None:
        return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
