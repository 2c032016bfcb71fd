"""What a file must look like to be stored as mail, and how a message's source names its file."""

from __future__ import annotations

import pytest

from replyguard.domain.inbound.parse import MessageParseError, not_mail, parse_message
from replyguard.domain.inbound.status import SOURCE_LENGTH, channel_of, file_source, is_history


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"", "it is empty"),
        (b"\n\r\n  \t\n", "it is empty"),
        (b"# replyguard\n\nA self-hosted outbound email sequence engine.\n", "no header section"),
        (b"email,first_name\nann@x.test,Ann\n", "no header section"),
        (b"From x Mon Dec  7 10:00:00 2026\nnot a header\n", "no header section"),
        (b" indented: a continuation line cannot start a message\n", "no header section"),
    ],
)
def test_what_is_not_mail_at_all(raw: bytes, why: str) -> None:
    reason = not_mail(raw)
    assert reason is not None and reason.startswith(why)
    with pytest.raises(MessageParseError):  # the parser agrees: it would be kept as unparsable
        parse_message(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b"From: ann@x.test\nSubject: hi\n\nHello\n",
        b"\r\n\r\nReceived: from mx\r\nFrom: ann@x.test\r\n\r\nHello\r\n",  # leading blank lines
        b"From x Mon Dec  7 10:00:00 2026\nFrom: ann@x.test\n\nHi\n",  # an mbox envelope first
        b"X-Odd  : spaced name\n\n",
        b"Subject: \xff\xfe bytes that do not decode\n\n\x00",
    ],
)
def test_what_may_be_mail(raw: bytes) -> None:
    assert not_mail(raw) is None


def test_a_file_source_names_the_file_and_keeps_its_end_when_long() -> None:
    assert file_source("in.mbox#3") == "file:in.mbox#3"
    deep = "/var/mail/exports/" + "x" * 60 + "/1734567890.M1P2.host:2,S"
    source = file_source(deep)
    assert len(source) == SOURCE_LENGTH and source.startswith("file:…") and source.endswith("host:2,S")
    old = file_source(deep, history=True)
    assert len(old) == SOURCE_LENGTH and is_history(old) and old.endswith("host:2,S-history")


@pytest.mark.parametrize(
    ("source", "channel"),
    [
        ("file:in.mbox#3", "file"),
        (file_source("/x/" + "y" * 80, history=True), "file-history"),
        ("imap-history", "imap-history"),
        ("stdin", "stdin"),
        ("mailgun", "mailgun"),
        ("z" * 40, "z" * 20),
    ],
)
def test_a_reply_records_the_channel_of_its_source(source: str, channel: str) -> None:
    assert channel_of(source) == channel
