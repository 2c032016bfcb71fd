"""Request bodies: spooled to a temporary file under a limit, and forms parsed as bytes.

Starlette's form parser decodes fields to text and caps each part at 1 MB; a raw MIME message
must reach the store byte for byte and may be far larger, so webhooks parse forms here.

Limits before work: the body is refused (BodyTooLarge) as soon as it passes the limit, the
declared Content-Length is checked before a byte is read, and the body is held in memory only
up to `SPOOL_IN_MEMORY` (beyond, on disk) until the request is authenticated. A form has at
most MAX_FIELDS fields; python-multipart bounds each part's headers (8 of at most 4,224 bytes)
and its boundary (256 bytes). `parse_form(..., keep=...)` keeps only the named fields: a body
signed inside itself (Mailgun) is verified from a pass that holds only the signature fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from tempfile import SpooledTemporaryFile
from typing import TYPE_CHECKING
from urllib.parse import unquote_to_bytes

from python_multipart import MultipartParser, QuerystringParser
from python_multipart.multipart import parse_options_header
from starlette.requests import Request

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks

from replyguard.domain.inbound.limits import HEAD_BYTES

MAX_FIELDS = 1000
MAX_NAME = 1000
SPOOL_IN_MEMORY = 1024 * 1024
CHUNK = 1024 * 1024


class BodyTooLarge(ValueError):
    """The request body is larger than the configured limit. `head`: its first bytes."""

    def __init__(self, message: str, size: int, head: bytes = b"") -> None:
        super().__init__(message)
        self.size, self.head = size, head


class BadForm(ValueError):
    """The body is not a form this endpoint can read."""


@dataclass(frozen=True, slots=True)
class Part:
    data: bytes
    filename: str | None = None
    content_type: str | None = None


@dataclass(frozen=True, slots=True)
class Form:
    parts: dict[str, list[Part]] = field(default_factory=dict)

    def raw(self, name: str) -> bytes | None:
        """The first value of `name` as bytes, or None when absent."""
        found = self.parts.get(name)
        return found[0].data if found else None

    def text(self, name: str, charset: str = "utf-8") -> str | None:
        """The first value of `name` decoded (undecodable bytes replaced), or None."""
        data = self.raw(name)
        return None if data is None else decode(data, charset)

    def files(self) -> list[tuple[str, Part]]:
        return [(name, p) for name, ps in self.parts.items() for p in ps if p.filename is not None]


def decode(data: bytes, charset: str) -> str:
    try:
        return data.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


class Body:
    """A request body spooled to memory, then to a temporary file past SPOOL_IN_MEMORY."""

    def __init__(self) -> None:
        self._file: SpooledTemporaryFile[bytes] = SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115
        self.size = 0

    def write(self, data: bytes) -> None:
        self._file.write(data)
        self.size += len(data)

    def chunks(self) -> Iterator[bytes]:
        self._file.seek(0)
        while chunk := self._file.read(CHUNK):
            yield chunk

    def head(self, n: int = HEAD_BYTES) -> bytes:
        self._file.seek(0)
        return self._file.read(n)

    def read(self) -> bytes:
        self._file.seek(0)
        return self._file.read()

    def close(self) -> None:
        self._file.close()


async def spool(request: Request, limit: int) -> Body:
    """The whole body, refusing (BodyTooLarge) as soon as it passes `limit` bytes.

    The declared Content-Length is checked before anything is read. The caller closes it.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        head = await _head(request)  # what a person will see of it, and no more
        raise BodyTooLarge(f"declared body of {declared} bytes exceeds {limit}", int(declared), head)
    body = Body()
    try:
        async for chunk in request.stream():
            if body.size + len(chunk) > limit:
                raise BodyTooLarge(f"body exceeds {limit} bytes", body.size + len(chunk), body.head())
            body.write(chunk)
    except BaseException:
        body.close()
        raise
    return body


async def _head(request: Request) -> bytes:
    head = b""
    async for chunk in request.stream():
        head += chunk[: HEAD_BYTES - len(head)]
        if len(head) >= HEAD_BYTES:
            break
    return head


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole (small) body in memory, refusing (BodyTooLarge) past `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"declared body of {declared} bytes exceeds {limit}", int(declared))
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"body exceeds {limit} bytes", size)
        chunks.append(chunk)
    return b"".join(chunks)


def parse_form(
    content_type: str,
    body: Iterable[bytes],
    *,
    keep: Callable[[str], bool] | None = None,
    max_kept: int | None = None,
) -> Form:
    """Parse multipart/form-data or application/x-www-form-urlencoded from chunks, keeping bytes.

    Streaming: only the fields kept are held. Values are bytes; urlencoded values are
    percent-decoded to bytes, so UTF-8 (or any charset) arrives intact. `keep`: only fields
    whose name it accepts are kept; `max_kept`: BadForm once they pass this many bytes.
    BadForm for anything that is not such a form.
    """
    mime, params = parse_options_header(content_type)
    if mime == b"application/x-www-form-urlencoded":
        return parse_urlencoded(body, keep=keep, max_kept=max_kept)
    if mime == b"multipart/form-data" and params.get(b"boundary"):
        return _multipart(params[b"boundary"], body, _Fields(keep, max_kept))
    raise BadForm(f"expected a form, got {mime.decode('latin-1') or 'no content type'}")


def parse_urlencoded(
    body: Iterable[bytes], *, keep: Callable[[str], bool] | None = None, max_kept: int | None = None
) -> Form:
    """`a=1&b=%C3%A9`: names decoded as UTF-8, values kept as percent-decoded bytes.

    `parse_qsl` cannot do this: given bytes it decodes percent escapes as ASCII and raises on
    the first non-ASCII character (a Mailgun post from "Lucía" was refused).
    """
    form = Form()
    fields = _Fields(keep, max_kept)
    name: list[bytes] = []
    data: list[bytes] = []

    def on_field_start() -> None:
        name.clear()
        data.clear()
        fields.begin()

    def on_field_name(chunk: bytes, start: int, end: int) -> None:
        name.append(chunk[start:end])
        if sum(map(len, name)) > MAX_NAME:
            raise BadForm("a form field name is too long")

    def on_field_data(chunk: bytes, start: int, end: int) -> None:
        if fields.kept(_unquote(b"".join(name)).decode("utf-8", "replace")):
            fields.count_kept(end - start)
            data.append(chunk[start:end])

    def on_field_end() -> None:
        field_name = _unquote(b"".join(name)).decode("utf-8", "replace")
        if fields.kept(field_name):
            form.parts.setdefault(field_name, []).append(Part(_unquote(b"".join(data))))

    parser = QuerystringParser(
        {
            "on_field_start": on_field_start,
            "on_field_name": on_field_name,
            "on_field_data": on_field_data,
            "on_field_end": on_field_end,
        }
    )
    try:
        for chunk in body:
            parser.write(chunk)
        parser.finalize()
    except BadForm:
        raise
    except Exception as exc:  # python-multipart's own errors for bad input
        raise BadForm(f"malformed form body: {exc}") from None
    return form


def _unquote(value: bytes) -> bytes:
    # "+" is a space in a form; "%2B" stays a plus: replace before unquoting.
    return unquote_to_bytes(value.replace(b"+", b" "))


class _Fields:
    """Which fields a parse keeps, and how many bytes of them it holds."""

    def __init__(self, keep: Callable[[str], bool] | None, max_kept: int | None) -> None:
        self.keep, self.max_kept = keep, max_kept
        self.count = 0
        self.held = 0
        self._decided: bool | None = None

    def begin(self) -> None:
        self.count += 1
        self._decided = None
        if self.count > MAX_FIELDS:
            raise BadForm("too many form fields")

    def kept(self, name: str) -> bool:
        if self._decided is None:
            self._decided = self.keep is None or self.keep(name)
        return self._decided

    def count_kept(self, size: int) -> None:
        self.held += size
        if self.max_kept is not None and self.held > self.max_kept:
            raise BadForm("a form field is too large")


def _multipart(boundary: bytes, body: Iterable[bytes], fields: _Fields) -> Form:
    form = Form()
    state = _PartState(fields)
    try:
        parser = MultipartParser(boundary, state.callbacks(form))
        for chunk in body:
            parser.write(chunk)
        parser.finalize()
    except BadForm:
        raise
    except Exception as exc:  # python-multipart raises several error types for bad input
        raise BadForm(f"malformed multipart body: {exc}") from None
    return form


class _PartState:
    """What python-multipart's callbacks have seen of the current part."""

    def __init__(self, fields: _Fields) -> None:
        self.fields = fields
        self.data: list[bytes] = []
        self.headers: list[tuple[bytes, bytes]] = []
        self.name_buf: list[bytes] = []
        self.value_buf: list[bytes] = []
        self.name = ""

    def callbacks(self, form: Form) -> MultipartCallbacks:
        def on_part_begin() -> None:
            self.data.clear()
            self.headers.clear()
            self.fields.begin()

        def on_header_field(chunk: bytes, start: int, end: int) -> None:
            self.name_buf.append(chunk[start:end])

        def on_header_value(chunk: bytes, start: int, end: int) -> None:
            self.value_buf.append(chunk[start:end])

        def on_header_end() -> None:
            self.headers.append((b"".join(self.name_buf).lower(), b"".join(self.value_buf)))
            self.name_buf.clear()
            self.value_buf.clear()

        def on_headers_finished() -> None:
            self.name = _disposition(dict(self.headers))[0]

        def on_part_data(chunk: bytes, start: int, end: int) -> None:
            if self.fields.kept(self.name):
                self.fields.count_kept(end - start)
                self.data.append(chunk[start:end])

        def on_part_end() -> None:
            if self.fields.kept(self.name):
                name, filename, content_type = _disposition(dict(self.headers))
                form.parts.setdefault(name, []).append(Part(b"".join(self.data), filename, content_type))
            self.data.clear()

        return {
            "on_part_begin": on_part_begin,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
        }


def _disposition(headers: dict[bytes, bytes]) -> tuple[str, str | None, str | None]:
    holder = Message()
    holder["Content-Disposition"] = headers.get(b"content-disposition", b"").decode("utf-8", "replace")
    try:
        name = holder.get_param("name", header="content-disposition")
        filename = holder.get_filename()
    except Exception as exc:  # the email package's parameter parser on hostile input
        raise BadForm(f"unreadable Content-Disposition: {exc.__class__.__name__}") from None
    if not isinstance(name, str):
        raise BadForm("a form part has no name")
    content_type = headers.get(b"content-type")
    return name, filename, content_type.decode("latin-1") if content_type else None
