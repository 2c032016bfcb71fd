"""Uploaded files read whole, but never more than the configured limit."""

from __future__ import annotations

from fastapi import HTTPException
from starlette.datastructures import UploadFile

_CHUNK = 1 << 16


def read_upload(upload: UploadFile, limit: int) -> bytes:
    """The file's bytes (from its spooled file: call from a sync endpoint); 413 as soon as it
    passes `limit`."""
    chunks: list[bytes] = []
    size = 0
    upload.file.seek(0)
    while chunk := upload.file.read(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise HTTPException(413, f"the file is larger than {limit // (1024 * 1024)} MB")
        chunks.append(chunk)
    return b"".join(chunks)
