"""Request bodies as bytes: a size-limited reader and a form parser that keeps raw bytes.

Starlette's form parser decodes fields to text and caps each part at 1 MB; a raw MIME message
must reach the store byte for byte and may be far larger, so webhooks parse forms here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import Message
from urllib.parse import parse_qsl

from python_multipart import MultipartParser
from python_multipart.multipart import parse_options_header
from starlette.requests import Request

MAX_FIELDS = 1000


class BodyTooLarge(ValueError):
    """The request body is larger than the configured limit."""


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


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, refusing (BodyTooLarge) as soon as it passes `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"body of {declared} bytes exceeds {limit}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"body exceeds {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def parse_form(content_type: str, body: bytes) -> Form:
    """Parse multipart/form-data or application/x-www-form-urlencoded, keeping bytes."""
    mime, params = parse_options_header(content_type)
    if mime == b"application/x-www-form-urlencoded":
        try:
            pairs = parse_qsl(body, keep_blank_values=True, max_num_fields=MAX_FIELDS)
        except ValueError as exc:
            raise BadForm(str(exc)) from None
        form = Form()
        for name, value in pairs:
            form.parts.setdefault(name.decode("utf-8", "replace"), []).append(Part(value))
        return form
    if mime == b"multipart/form-data" and params.get(b"boundary"):
        return _multipart(params[b"boundary"], body)
    raise BadForm(f"expected a form, got {mime.decode('latin-1') or 'no content type'}")


def _multipart(boundary: bytes, body: bytes) -> Form:
    form = Form()
    data: list[bytes] = []
    headers: list[tuple[bytes, bytes]] = []
    name_buf: list[bytes] = []
    value_buf: list[bytes] = []

    def on_part_begin() -> None:
        data.clear()
        headers.clear()

    def on_header_field(chunk: bytes, start: int, end: int) -> None:
        name_buf.append(chunk[start:end])

    def on_header_value(chunk: bytes, start: int, end: int) -> None:
        value_buf.append(chunk[start:end])

    def on_header_end() -> None:
        headers.append((b"".join(name_buf).lower(), b"".join(value_buf)))
        name_buf.clear()
        value_buf.clear()

    def on_part_data(chunk: bytes, start: int, end: int) -> None:
        data.append(chunk[start:end])

    def on_part_end() -> None:
        if sum(len(v) for v in form.parts.values()) >= MAX_FIELDS:
            raise BadForm("too many form fields")
        name, part = _part(dict(headers), b"".join(data))
        form.parts.setdefault(name, []).append(part)

    parser = MultipartParser(
        boundary,
        {
            "on_part_begin": on_part_begin,
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_part_data": on_part_data,
            "on_part_end": on_part_end,
        },
    )
    try:
        parser.write(body)
        parser.finalize()
    except BadForm:
        raise
    except Exception as exc:  # python-multipart raises several error types for bad input
        raise BadForm(f"malformed multipart body: {exc}") from None
    return form


def _part(headers: dict[bytes, bytes], data: bytes) -> tuple[str, Part]:
    holder = Message()
    holder["Content-Disposition"] = headers.get(b"content-disposition", b"").decode("utf-8", "replace")
    name = holder.get_param("name", header="content-disposition")
    if not isinstance(name, str):
        raise BadForm("a form part has no name")
    filename = holder.get_filename()
    content_type = headers.get(b"content-type")
    return name, Part(data, filename, content_type.decode("latin-1") if content_type else None)
