"""Reading messages from files: single .eml files, mbox files, Maildir folders and stdin.

Everything streams: an mbox is read line by line and one message is held at a time, so a
multi-gigabyte mailbox needs the memory of its largest message, not of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

MBOX_SEPARATOR = b"From "


@dataclass(frozen=True, slots=True)
class MailItem:
    origin: str  # file path, `path#n` for the n-th message of an mbox, or `-`
    raw: bytes


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
            size += sum(f.stat().st_size for f in _maildir_files(path))
        elif path.exists():
            size += path.stat().st_size
    return size


def iter_messages(paths: list[str], stdin: BinaryIO, progress: Progress | None = None) -> Iterator[MailItem]:
    tick = progress or (lambda _n: None)
    for name in paths:
        if name == "-":
            yield from _from_stream(stdin, "-", tick)
            continue
        path = Path(name)
        if path.is_dir():
            for file in _maildir_files(path):
                data = file.read_bytes()
                tick(len(data))
                yield MailItem(str(file), data)
        elif path.is_file():
            with path.open("rb") as handle:
                yield from _from_stream(handle, str(path), tick)
        else:
            raise MailSourceError(f"{name}: no such file or folder")


def _maildir_files(root: Path) -> list[Path]:
    """A Maildir's cur/ and new/ (never tmp/: those are half-delivered); else every file below."""
    subdirs = [root / "cur", root / "new"]
    if all(d.is_dir() for d in subdirs):
        files = [f for d in subdirs for f in d.iterdir() if f.is_file()]
    else:
        files = [f for f in root.rglob("*") if f.is_file() and not f.name.startswith(".")]
    return sorted(files)


def _from_stream(handle: BinaryIO, origin: str, tick: Progress) -> Iterator[MailItem]:
    first = handle.readline()
    tick(len(first))
    if not first.startswith(MBOX_SEPARATOR):
        rest = handle.read()
        tick(len(rest))
        yield MailItem(origin, first + rest)
        return
    yield from _mbox(handle, origin, tick)


def _mbox(handle: BinaryIO, origin: str, tick: Progress) -> Iterator[MailItem]:
    """mboxrd: a message starts at a `From ` line after a blank line; `>From ` is unquoted."""
    lines: list[bytes] = []
    count = 0
    previous_blank = True
    for raw_line in handle:
        tick(len(raw_line))
        if raw_line.startswith(MBOX_SEPARATOR) and previous_blank:
            if lines:
                count += 1
                yield MailItem(f"{origin}#{count}", _finish(lines))
            lines = []
            previous_blank = False
            continue
        quoted = raw_line.startswith(b">") and raw_line.lstrip(b">").startswith(MBOX_SEPARATOR)
        line = raw_line[1:] if quoted else raw_line
        lines.append(line)
        previous_blank = line in (b"\n", b"\r\n")
    if lines:
        yield MailItem(f"{origin}#{count + 1}", _finish(lines))


def _finish(lines: list[bytes]) -> bytes:
    # The blank line before the next separator belongs to the mbox format, not the message.
    if lines and lines[-1] in (b"\n", b"\r\n"):
        lines = lines[:-1]
    return b"".join(lines)
