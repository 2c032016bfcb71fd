"""The storable-text step and the limits checked before parsing: pure, table-tested."""

from __future__ import annotations

import pytest

from replyguard.domain.inbound.classify import classify
from replyguard.domain.inbound.limits import MessageLimits, head_of, over_limit
from replyguard.domain.inbound.status import (
    IllegalInboundMove,
    InboundStatus,
    check_inbound_move,
    parse_status,
)
from replyguard.domain.inbound.storable import storable_address, storable_classification, storable_text


@pytest.mark.parametrize(
    ("value", "limit", "expected", "changes"),
    [
        ("plain", None, "plain", ()),
        ("a\x00b\x00", None, "ab", ("nul-removed",)),
        ("lone \ud83d here", None, "lone \ufffd here", ("surrogate-replaced",)),
        ("pair \ud83d\ude00 joined", None, "pair 😀 joined", ("surrogate-replaced",)),
        ("abcdef", 3, "abc", ("cut-to-3",)),
        ("\x00\udc80xyz", 2, "\ufffdx", ("nul-removed", "surrogate-replaced", "cut-to-2")),
    ],
)
def test_storable_text(value: str, limit: int | None, expected: str, changes: tuple[str, ...]) -> None:
    assert storable_text(value, limit) == (expected, changes)
    expected.encode("utf-8")  # both databases can take it


@pytest.mark.parametrize(
    ("address", "kept"),
    [
        ("priya@fernhollow.test", True),
        ("p" * 310 + "@x.test", True),
        ("p" * 320 + "@x.test", False),
        ("a@" + "d" * 256, False),
        ("a\x00b@x.test", False),
        ("a b@x.test", False),
        (None, False),
    ],
)
def test_an_address_no_column_holds_is_dropped_never_cut(address: str | None, kept: bool) -> None:
    clean, changes = storable_address(address)
    assert (clean == address) is kept or (address is None and clean is None)
    assert bool(changes) is (not kept and address is not None)


def test_a_classification_is_made_storable_with_evidence_of_each_change() -> None:
    raw = (
        b"From: Someone <" + b"x" * 400 + b"@evil.test>\r\nSubject: =?utf-7?q?hi_+2D0-?=\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
        b"Yes=00 please.\r\n"
    )
    c = storable_classification(classify(raw))
    assert c.from_address is None and "\x00" not in c.reply_text and c.subject == "hi \ufffd"
    assert {
        "storable:from:dropped-over-320",
        "storable:text:nul-removed",
        "storable:subject:surrogate-replaced",
    } <= set(c.evidence)
    clean = classify(b"From: a@b.test\r\nSubject: hi\r\n\r\nhello\r\n")
    assert storable_classification(clean) is clean  # nothing to change: the same object


SMALL = MessageLimits(max_bytes=10_000, max_header_bytes=200, max_parts=5, max_multiparts=2)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"From: a@b\r\n\r\nhello\r\n", None),
        (b"From: a@b\r\n\r\n" + b"x" * 10_000, "over the limit of 10000"),
        (b"X-Pad: " + b"p" * 300 + b"\r\n\r\nbody", "header section is over the limit of 200"),
        (b"X-Pad: " + b"p" * 300, "header section is over the limit of 200"),  # no blank line at all
        (
            b'Content-Type: multipart/mixed; BOUNDARY="Ab"\r\n\r\n'
            + b"--Ab\r\n\r\nx\r\n" * 6
            + b"--Ab--\r\n",
            "7 MIME parts is over the limit of 5",
        ),
        (b'Content-Type: multipart/mixed; boundary="Ab"\r\n\r\n' + b"\r\n-- signature\r\n" * 9, None),
        (
            b"".join(b'Content-Type: multipart/mixed; Boundary="n%d"\r\n' % i for i in range(3)) + b"\r\n",
            "more than 2",
        ),
    ],
    ids=["fine", "size", "headers", "headers-no-blank-line", "parts", "dash-lines-are-not-parts", "nesting"],
)
def test_over_limit(raw: bytes, why: str | None) -> None:
    found = over_limit(raw, SMALL)
    assert (found is None) if why is None else (why in (found or "")), found


def test_the_head_of_a_message_is_its_header_section() -> None:
    assert head_of(b"A: 1\r\nB: 2\r\n\r\nbody") == b"A: 1\r\nB: 2\r\n\r\n"
    assert head_of(b"A: " + b"x" * 100, cap=10) == b"A: xxxxxxx"


def test_inbound_statuses_move_only_as_drawn() -> None:
    assert check_inbound_move("stored", InboundStatus.QUARANTINED) is InboundStatus.QUARANTINED
    assert check_inbound_move("quarantined", InboundStatus.STORED) is InboundStatus.STORED
    for before in ("matched", "refused", "unmatched"):
        with pytest.raises(IllegalInboundMove):
            check_inbound_move(before, InboundStatus.STORED)
    assert parse_status(" Quarantined ") is InboundStatus.QUARANTINED
    with pytest.raises(ValueError, match="unknown status 'lost'"):
        parse_status("lost")
