"""Reading messages from files: single .eml files, mbox files, Maildir folders and stdin.

Everything streams: an mbox is read line by line and one message is held at a time, so a
multi-gigabyte mailbox needs the memory of its largest message, not of the file; a message
over `max_bytes` is not held at all (its head and the reason come out as a refused item).

What real files look like, and what is done about it:
* gzip, bzip2 and xz files are decompressed on the fly; zstd and zip get a clear error;
  a UTF-8 byte order mark is skipped; UTF-16 text gets a clear error.
* Leading blank lines are skipped before deciding between one message and an mbox.
* mbox (mboxo/mboxrd): a message starts at a `From ` line that follows a blank line, has
  the `From sender ctime-date` shape, and is followed by a header line. A `From ` line in a
  body that its writer did not quote is therefore text, not a new message. `>From ` lines
  lose one `>`.
* A folder: a Maildir (cur/ and new/), a tree of Maildirs (Maildir++ `.Sent/`, a mail
  server's user folder) or a plain folder of .eml files. Never `tmp/` (half-delivered
  files), hidden files, or a mail server's index and state files (dovecot.index*,
  dovecot-uidlist, maildirsize, courierimap*, ...).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

from replyguard.domain.inbound.limits import MIB, head_of

MBOX_SEPARATOR = b"From "
DEFAULT_MAX_BYTES = 50 * MIB
_DAY = rb"(?:mon|tue|wed|thu|fri|sat|sun)"
_MONTH = rb"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)"
# RFC 4155: "From " sender, then a UNIX ctime date; exporters add a zone before or after it.
_SEPARATOR = re.compile(
    rb"From \S*\s+" + _DAY + rb",?\s+" + _MONTH + rb"\s+\d{1,2}\s+\d{1,2}:\d{2}(?::\d{2})?"
    rb"(?:\s+(?:[+-]\d{4}|[a-z]{1,5}))?\s+\d{4}(?:\s+(?:[+-]\d{4}|[a-z]{1,5}))?\s*$",
    re.IGNORECASE,
)
_HEADER_LINE = re.compile(rb"[!-9;-~]+[ \t]*:")
_NOT_MAIL = re.compile(
    r"^(dovecot[.-].*|dovecot\.index.*|maildirsize|maildirfolder|subscriptions|courierimap.*"
    r"|.*\.(index|lock|cache|log)|uidvalidity|uidlist)$",
    re.IGNORECASE,
)
_MAGIC: list[tuple[bytes, str]] = [
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"PK\x03\x04", "zip"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
]


@dataclass(frozen=True, slots=True)
class MailItem:
    origin: str  # file path, `path#n` for the n-th message of an mbox, or `-`
    raw: bytes
    refused: str | None = None  # why it was not read whole; `raw` is then only its head


class MailSourceError(OSError):
    pass


Progress = Callable[[int], None]  # called with bytes consumed since the last call


def total_size(paths: list[str]) -> int:
    size = 0
    for name in paths:
        if name == "-":
            continue
        path = Path(name)
        if path.is_dir():
            size += sum(f.stat().st_size for f in maildir_files(path))
        elif path.exists():
            size += path.stat().st_size
    return size


def iter_messages(
    paths: list[str],
    stdin: BinaryIO,
    progress: Progress | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[MailItem]:
    """Every message of `paths` (`-` is stdin), in order. MailSourceError for a path that
    cannot be read as mail at all (missing, compressed in a format we do not read, UTF-16)."""
    tick = progress or (lambda _n: None)
    for name in paths:
        if name == "-":
            yield from _from_stream(stdin, "-", tick, max_bytes)
            continue
        path = Path(name)
        if path.is_dir():
            for file in maildir_files(path):
                yield _maildir_item(file, tick, max_bytes)
        elif path.is_file():
            with path.open("rb") as handle:
                yield from _from_stream(handle, str(path), tick, max_bytes)
        else:
            raise MailSourceError(f"{name}: no such file or folder")


def maildir_files(root: Path) -> list[Path]:
    """The message files below `root`; see the module docstring for what is left out."""
    if _is_maildir(root):
        boxes = [root]
    else:
        boxes = sorted({d.parent for name in ("cur", "new") for d in root.rglob(name) if d.is_dir()})
    if boxes:
        candidates = [f for box in boxes for sub in ("cur", "new") for f in _files_in(box / sub)]
    else:
        candidates = [f for f in root.rglob("*") if "tmp" not in f.relative_to(root).parts[:-1]]
    return sorted(f for f in candidates if f.is_file() and not _skipped(f.name))


def _is_maildir(folder: Path) -> bool:
    return folder.is_dir() and ((folder / "cur").is_dir() or (folder / "new").is_dir())


def _files_in(folder: Path) -> list[Path]:
    return list(folder.iterdir()) if folder.is_dir() else []


def _skipped(name: str) -> bool:
    return name.startswith(".") or bool(_NOT_MAIL.match(name))


def _maildir_item(file: Path, tick: Progress, max_bytes: int) -> MailItem:
    size = file.stat().st_size
    with file.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    tick(size)
    if len(data) > max_bytes:
        return MailItem(str(file), head_of(data), _too_large(size, max_bytes))
    return MailItem(str(file), data)


def _from_stream(handle: BinaryIO, origin: str, tick: Progress, max_bytes: int) -> Iterator[MailItem]:
    handle = _plain(handle, origin)
    first = handle.readline()
    tick(len(first))
    while first in (b"\n", b"\r\n"):  # leading blank lines say nothing
        first = handle.readline()
        tick(len(first))
    # A message's first header is "From:", never "From ": any such first line is an mbox's.
    if first.startswith(MBOX_SEPARATOR) and len(first.split()) >= 2:
        yield from _mbox(handle, origin, tick, max_bytes)
        return
    rest = handle.read(max_bytes + 1 - len(first)) if len(first) <= max_bytes else b""
    data = first + rest
    tick(len(rest))
    if len(data) > max_bytes:
        drained = _drain(handle, tick)
        yield MailItem(origin, head_of(data), _too_large(len(data) + drained, max_bytes))
        return
    yield MailItem(origin, data)


def _plain(handle: BinaryIO, origin: str) -> BinaryIO:
    """The stream with compression undone and a UTF-8 byte order mark skipped."""
    start = handle.read(6)
    whole: BinaryIO = io.BufferedReader(_Rejoined(start, handle))
    for magic, kind in _MAGIC:
        if not start.startswith(magic):
            continue
        if kind == "gzip":
            return _plain(cast(BinaryIO, gzip.GzipFile(fileobj=whole)), origin)
        if kind == "bzip2":
            return _plain(cast(BinaryIO, bz2.BZ2File(whole)), origin)
        if kind == "xz":
            return _plain(cast(BinaryIO, lzma.LZMAFile(whole)), origin)
        if kind == "utf-16":
            raise MailSourceError(f"{origin}: UTF-16 text, not mail: convert it to UTF-8 first")
        raise MailSourceError(f"{origin}: a {kind} archive: unpack it and ingest the files inside")
    if start.startswith(b"\xef\xbb\xbf"):
        whole.read(3)
    return whole


class _Rejoined(io.RawIOBase):
    """The bytes already read from a stream, followed by the rest of that stream."""

    def __init__(self, start: bytes, rest: BinaryIO) -> None:
        self._start, self._rest = start, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        if self._start:
            n = min(len(view), len(self._start))
            view[:n], self._start = self._start[:n], self._start[n:]
            return n
        data = self._rest.read(len(view))
        view[: len(data)] = data
        return len(data)


def _mbox(handle: BinaryIO, origin: str, tick: Progress, max_bytes: int) -> Iterator[MailItem]:
    """Messages between separators (see the module docstring); `>From ` lines unquoted."""
    message = _Message(max_bytes)
    count = 0
    previous_blank = False
    candidate: bytes | None = None  # a separator-shaped line, until the next line decides
    for raw_line in handle:
        tick(len(raw_line))
        if candidate is not None:
            if _HEADER_LINE.match(raw_line):
                count += 1
                if not message.empty:
                    yield message.item(f"{origin}#{count}")
                message = _Message(max_bytes)
            else:
                message.add(candidate)  # text that looked like a separator
            candidate = None
        elif previous_blank and raw_line.startswith(MBOX_SEPARATOR) and _SEPARATOR.match(raw_line):
            candidate = raw_line
            continue
        quoted = raw_line.startswith(b">") and raw_line.lstrip(b">").startswith(MBOX_SEPARATOR)
        line = raw_line[1:] if quoted else raw_line
        message.add(line)
        previous_blank = line in (b"\n", b"\r\n")
    if candidate is not None:
        message.add(candidate)
    if not message.empty:
        yield message.item(f"{origin}#{count + 1}")


class _Message:
    """The lines of one mbox message, held up to `max_bytes`; beyond that only counted."""

    def __init__(self, max_bytes: int) -> None:
        self.lines: list[bytes] = []
        self.size = 0
        self.max_bytes = max_bytes

    @property
    def empty(self) -> bool:
        return self.size == 0

    def add(self, line: bytes) -> None:
        self.size += len(line)
        if self.size <= self.max_bytes:
            self.lines.append(line)
        elif self.size - len(line) <= self.max_bytes:  # just went over: keep only the head
            self.lines = [head_of(b"".join(self.lines))]

    def item(self, origin: str) -> MailItem:
        if self.size > self.max_bytes:
            return MailItem(origin, self.lines[0], _too_large(self.size, self.max_bytes))
        # The blank line before the next separator belongs to the mbox format, not the message.
        lines = self.lines[:-1] if self.lines and self.lines[-1] in (b"\n", b"\r\n") else self.lines
        return MailItem(origin, b"".join(lines))


def _drain(handle: BinaryIO, tick: Progress) -> int:
    total = 0
    while chunk := handle.read(1 << 20):
        total += len(chunk)
        tick(len(chunk))
    return total


def _too_large(size: int, max_bytes: int) -> str:
    return f"message of {size} bytes is over the limit of {max_bytes}"
