"""An outgoing email as RFC 5322 bytes: the headers receivers act on, and the CR/LF guard."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from email import message_from_bytes, policy
from email.utils import parsedate_to_datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replyguard.domain.addresses import UnsafeHeaderValue
from replyguard.domain.outgoing import OutgoingEmail, build_message, message_bytes

KEY = "0123456789abcdef0123456789abcdef"
TOKEN = f"{KEY}.{'f' * 20}"
LONG_URL = f"https://replyguard.example.test/unsubscribe/one-click/{TOKEN}"
EMAIL = OutgoingEmail(
    send_key=KEY,
    message_id=f"<rg.{KEY}@northwind-analytics.test>",
    from_name="Dana Whitfield",
    from_address="dana@northwind-analytics.test",
    to_name="Lucía Ortega",
    to_address="lortega@grupo-mirador.test",
    subject="Quick question about Grupo Mirador's reporting — ¿tiene un minuto?",
    body="Hola Lucía,\n\nhow does your team build its weekly reports today?\n\nDana\n",
    date=datetime(2026, 12, 7, 15, 0, tzinfo=UTC),
    unsubscribe_url=LONG_URL,
    unsubscribe_mailto=f"dana+unsubscribe-{TOKEN}@northwind-analytics.test",
)


def raw_headers(data: bytes) -> dict[str, str]:
    head = data.split(b"\r\n\r\n", 1)[0].decode("ascii")
    unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ")
    return dict(line.split(": ", 1) for line in unfolded.split("\r\n"))


def test_headers_are_what_receivers_expect() -> None:
    data = message_bytes(EMAIL)
    assert b"\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")  # CRLF line ends only
    headers = raw_headers(data)
    assert headers["Message-ID"] == EMAIL.message_id
    assert headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert headers["X-Replyguard-Send-Key"] == KEY
    assert "In-Reply-To" not in headers
    assert "References" not in headers
    # Receivers must be able to act on the URL: plain angle-bracketed URIs, no encoded words.
    unsubscribe = headers["List-Unsubscribe"]
    assert "=?" not in unsubscribe
    assert unsubscribe == f"<{LONG_URL}>, <mailto:{EMAIL.unsubscribe_mailto}>"


def test_parsed_message_round_trips() -> None:
    msg = message_from_bytes(message_bytes(EMAIL), policy=policy.default)
    assert msg["Subject"] == EMAIL.subject
    assert msg["From"].addresses[0].display_name == "Dana Whitfield"
    assert msg["From"].addresses[0].addr_spec == EMAIL.from_address
    assert msg["To"].addresses[0].display_name == "Lucía Ortega"
    assert msg["To"].addresses[0].addr_spec == EMAIL.to_address
    assert msg.get_content().replace("\r\n", "\n") == EMAIL.body
    assert msg.get_content_type() == "text/plain"


@pytest.mark.parametrize(
    "when",
    [
        datetime(2026, 12, 7, 15, 0, tzinfo=UTC),
        datetime(2026, 12, 7, 10, 0, tzinfo=timezone(timedelta(hours=-5))),
        datetime(2026, 3, 8, 7, 30, 15, tzinfo=UTC),
    ],
)
def test_date_header_is_the_given_instant(when: datetime) -> None:
    msg = build_message(replace(EMAIL, date=when))
    assert parsedate_to_datetime(msg["Date"]) == when


def test_follow_up_threads_into_the_first_email() -> None:
    first = "<rg.aaaa@northwind-analytics.test>"
    second = "<rg.bbbb@northwind-analytics.test>"
    msg = build_message(
        replace(EMAIL, subject="Re: Quick question", in_reply_to=second, references=f"{first} {second}")
    )
    assert msg["In-Reply-To"] == second
    assert msg["References"].split() == [first, second]


def test_only_a_mailto_gets_no_one_click_header() -> None:
    msg = build_message(replace(EMAIL, unsubscribe_url=None))
    assert msg["List-Unsubscribe"] == f"<mailto:{EMAIL.unsubscribe_mailto}>"
    assert msg["List-Unsubscribe-Post"] is None
    msg = build_message(replace(EMAIL, unsubscribe_url=None, unsubscribe_mailto=None))
    assert msg["List-Unsubscribe"] is None


@pytest.mark.parametrize(
    "field",
    [
        "subject",
        "from_name",
        "to_name",
        "to_address",
        "from_address",
        "message_id",
        "in_reply_to",
        "references",
        "unsubscribe_url",
        "unsubscribe_mailto",
    ],
)
@pytest.mark.parametrize("bad", ["\r\nBcc: victim@x.test", "\nBcc: victim@x.test", "\rX", "\x00", "\u2028X"])
def test_line_breaks_and_nul_in_any_header_field_are_refused(field: str, bad: str) -> None:
    value = getattr(EMAIL, field) or "<rg.x@y.test>"
    with pytest.raises(UnsafeHeaderValue):
        build_message(replace(EMAIL, **{field: value + bad}))


def test_line_breaks_in_the_body_are_fine() -> None:
    msg = build_message(replace(EMAIL, body="a\r\nb\nc\n"))
    assert "Bcc" not in msg


ANY_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=40)
# Message-IDs are built from a hex key and an ASCII domain; only their line breaks are in question.
ASCII_TEXT = st.text(alphabet=st.characters(max_codepoint=127), min_size=1, max_size=40)
FIELDS = st.one_of(
    st.tuples(st.sampled_from(["subject", "from_name", "to_name"]), ANY_TEXT),
    st.tuples(st.sampled_from(["in_reply_to", "references", "message_id"]), ASCII_TEXT),
)


@settings(max_examples=300, deadline=None)
@given(case=FIELDS)
def test_header_guard_never_lets_a_line_break_through(case: tuple[str, str]) -> None:
    """Whatever text reaches a header, the result is either refused up front or one header line."""
    field, text = case
    try:
        data = message_bytes(replace(EMAIL, **{field: text}))
    except UnsafeHeaderValue as exc:
        if field in ("message_id", "in_reply_to", "references") and "message ids" in str(exc):
            return  # a malformed id list is refused as such, line break or not
        assert any(c in text for c in "\r\n\x00") or len(("x" + text + "x").splitlines()) > 1
        return
    headers = data.split(b"\r\n\r\n", 1)[0]
    lines = headers.split(b"\r\n")
    names = [line.split(b":", 1)[0] for line in lines if not line.startswith((b" ", b"\t"))]
    assert sorted(names) == sorted(
        [
            b"From",
            b"To",
            b"Subject",
            b"Date",
            b"Message-ID",
            b"List-Unsubscribe",
            b"List-Unsubscribe-Post",
            b"X-Replyguard-Send-Key",
            b"Content-Type",
            b"Content-Transfer-Encoding",
            b"MIME-Version",
        ]
        + ([b"In-Reply-To"] if field == "in_reply_to" else [])
        + ([b"References"] if field == "references" else [])
    )
    assert b"\x00" not in headers
    assert b"\r" not in headers.replace(b"\r\n", b"")
    assert b"\n" not in headers.replace(b"\r\n", b"")


def test_malformed_message_ids_are_refused() -> None:
    for bad in ("<", "no-brackets@x.test", "<a@b> junk", "<a b@c>"):
        with pytest.raises(UnsafeHeaderValue, match="message ids"):
            message_bytes(replace(EMAIL, message_id=bad))
    assert b"References: <a@b.test> <c@d.test>" in message_bytes(
        replace(EMAIL, references="<a@b.test> <c@d.test>")
    )
