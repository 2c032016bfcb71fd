"""Builders for realistic inbound messages, written here (never copied from the corpus)."""

from __future__ import annotations

from collections.abc import Callable
from email.header import Header
from pathlib import Path

import pytest

from replyguard.domain.inbound import Classification, classify

MailBuilder = Callable[..., bytes]


def build_mail(
    body: str | bytes = "Hello",
    *,
    subject: str = "Re: Q3 offer",
    sender: str = "Jana Schmidt <jana@example.de>",
    date: str = "Mon, 15 Jul 2024 10:05:00 +0200",
    headers: dict[str, str] | None = None,
    content_type: str = 'text/plain; charset="utf-8"',
    charset: str = "utf-8",
) -> bytes:
    """A single-part message; `headers` are added verbatim (values may be empty)."""
    if not subject.isascii():  # real clients send RFC 2047 encoded words
        subject = Header(subject, "utf-8").encode()
    lines = [
        f"From: {sender}",
        "To: Max Weber <sales@example.com>",
        f"Subject: {subject}",
        f"Date: {date}",
        "Message-ID: <reply-1@example.de>",
        "In-Reply-To: <rg.0123456789abcdef0123456789abcdef@example.com>",
        "References: <rg.0123456789abcdef0123456789abcdef@example.com>",
        "MIME-Version: 1.0",
        f"Content-Type: {content_type}",
        "Content-Transfer-Encoding: 8bit",
    ]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
    data = body if isinstance(body, bytes) else body.encode(charset)
    return head + data


@pytest.fixture
def mail() -> MailBuilder:
    return build_mail


@pytest.fixture
def fixtures() -> Path:
    return Path(__file__).resolve().parents[2] / "fixtures" / "inbound"


@pytest.fixture
def run() -> Callable[[bytes], Classification]:
    return classify


@pytest.fixture(scope="session", autouse=True)
def _warm_dateparser() -> None:
    # dateparser's first call loads its locale data (about a second): pay it once per session.
    from dateparser.search import search_dates

    search_dates("until 5 August 2024", languages=["en"])
