"""Addresses and the header guard: what we accept, what we normalise, what we refuse."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replyguard.domain.addresses import (
    InvalidAddress,
    UnsafeHeaderValue,
    base_address,
    check_header_value,
    domain_of,
    format_address,
    normalize_address,
    sender_of,
    strip_comments,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("priya@fernhollow.test", "priya@fernhollow.test"),
        ("  Priya@FernHollow.Test ", "priya@fernhollow.test"),
        ("Priya Raman <Priya@fernhollow.test>", "priya@fernhollow.test"),
        ("tom.becker+news@cedarpoint-supply.test", "tom.becker+news@cedarpoint-supply.test"),
        ("a@b-c.d.test", "a@b-c.d.test"),
    ],
)
def test_normalize_address(raw: str, expected: str) -> None:
    assert normalize_address(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "priya",
        "priya@",
        "@fernhollow.test",
        "priya@fernhollow",  # no dot in the domain
        "pri ya@fernhollow.test",
        "priya@@fernhollow.test",
        "priya@-fernhollow.test",
        "priya@fernhollow-.test",
        "priya@fern_hollow.test",
        "<>",
        "a,b@x.test",
    ],
)
def test_invalid_addresses_name_the_value(raw: str) -> None:
    with pytest.raises(InvalidAddress, match="not a valid email address"):
        normalize_address(raw)


@pytest.mark.parametrize("raw", ["priya@fernhollow.test\r\nBcc: x@y.test", "a@b.test\n", "a@b.test\x00"])
def test_address_with_line_break_is_unsafe(raw: str) -> None:
    with pytest.raises(UnsafeHeaderValue):
        normalize_address(raw)


def test_base_address_and_domain() -> None:
    assert base_address("ann+news@x.test") == "ann@x.test"
    assert base_address("ann@x.test") == "ann@x.test"
    assert domain_of("Ann@X.Test") == "x.test"


@pytest.mark.parametrize(
    "bad", ["\r", "\n", "\r\n", "\x00", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\x1e"]
)
def test_check_header_value_refuses_every_line_break(bad: str) -> None:
    with pytest.raises(UnsafeHeaderValue, match="subject contains a line break or NUL"):
        check_header_value("subject", f"Hello{bad}Bcc: x@y.test")


def test_check_header_value_returns_safe_text_unchanged() -> None:
    text = "Grüße an Kessler Maschinenbau — 15 min?\t(ok)"
    assert check_header_value("subject", text) is text


@given(st.text())
def test_header_guard_agrees_with_splitlines(text: str) -> None:
    """A value is accepted only if the email package would see it as one line without NUL."""
    try:
        check_header_value("x", text)
    except UnsafeHeaderValue:
        assert len(("a" + text + "a").splitlines()) > 1 or "\x00" in text
    else:
        assert len(("a" + text + "a").splitlines()) == 1
        assert "\x00" not in text


def test_format_address() -> None:
    address = format_address("Lucía Ortega", "LOrtega@Grupo-Mirador.test")
    assert address.addr_spec == "lortega@grupo-mirador.test"
    assert address.display_name == "Lucía Ortega"
    with pytest.raises(UnsafeHeaderValue):
        format_address("Lucía\r\nBcc: x@y.test", "lortega@grupo-mirador.test")
    with pytest.raises(InvalidAddress):
        format_address("Lucía", "nobody")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Priya Raman <priya@fernhollow.test>", "priya@fernhollow.test"),
        ("priya@fernhollow.test", "priya@fernhollow.test"),
        ("priya@fernhollow.test (Priya Raman)", "priya@fernhollow.test"),
        ('"Raman, Priya" <priya@fernhollow.test>', "priya@fernhollow.test"),
        ("Raman, Priya <priya@fernhollow.test>", "priya@fernhollow.test"),  # unquoted comma
        # A display name that looks like an address never is the sender:
        ("=?utf-8?b?cHJpeWFAZmVybmhvbGxvdy50ZXN0?= <real@x.test>", "real@x.test"),
        ("=?utf-8?q?priya@fernhollow.test?= <real@x.test>", "real@x.test"),
        ('"priya@fernhollow.test" <real@x.test>', "real@x.test"),
        ("priya@fernhollow.test <real@x.test>", "real@x.test"),
        ('"Priya <priya@fernhollow.test>" <real@x.test>', "real@x.test"),
        ("real@x.test (<priya@fernhollow.test>)", "real@x.test"),
        ("<@relay.test:real@x.test>", "real@x.test"),  # an obsolete route
        # Several mailboxes, a group, or nothing: we cannot tell who speaks.
        ("real@x.test, Priya <priya@fernhollow.test>", None),
        ("<real@x.test> <priya@fernhollow.test>", None),
        ("=?utf-8?q?<priya@fernhollow.test>?= <real@x.test>", None),
        ("Friends: priya@fernhollow.test;", None),
        ("undisclosed-recipients:;", None),
        ("Priya Raman", None),
        ("", None),
        ("a" * 3000 + " <real@x.test>", None),
        # Unbalanced: each parser would end the comment, quote or bracket somewhere else.
        ("priya@fernhollow.test( <real@x.test>", None),
        ("=?utf-8?q?priya@fernhollow.test(?= <real@x.test>", None),
        ("priya@fernhollow.test) <real@x.test>", None),
        ('"priya@fernhollow.test <real@x.test>', None),
        ("Priya <priya@fernhollow.test", None),
        ("Priya priya@fernhollow.test>", None),
    ],
)
def test_sender_of_reads_the_raw_from_header(raw: str, expected: str | None) -> None:
    assert sender_of(raw) == expected


def test_strip_comments_keeps_quoted_text_and_nests() -> None:
    assert strip_comments('a (b (c) d) "e (f)" g') == 'a   "e (f)" g'
    assert strip_comments("a (unclosed") == "a "
    assert strip_comments("no comment") == "no comment"
