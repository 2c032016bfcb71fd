"""Send keys, Message-IDs and unsubscribe tokens."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replyguard.domain.message_ids import (
    MAX_IDS,
    check_unsubscribe_token,
    message_id_for,
    message_ids_in,
    normalize_message_id,
    parent_id,
    send_key,
    send_keys_in,
    thread_references,
    unsubscribe_token,
)

SECRET = "s3cret" * 8


def test_send_key_is_stable_and_32_hex() -> None:
    key = send_key(SECRET, 17, 2)
    assert key == send_key(SECRET, 17, 2)
    assert re.fullmatch(r"[0-9a-f]{32}", key)


def test_send_key_differs_per_input() -> None:
    keys = {
        send_key(SECRET, 17, 2),
        send_key(SECRET, 17, 3),
        send_key(SECRET, 18, 2),
        send_key("other", 17, 2),
        send_key(SECRET, 1, 72),  # "1:72" and "17:2" must not collide
        send_key(SECRET, 172, 0),
    }
    assert len(keys) == 6


@given(st.integers(1, 10**9), st.integers(1, 50), st.integers(1, 10**9), st.integers(1, 50))
def test_send_keys_of_different_steps_never_collide(e1: int, p1: int, e2: int, p2: int) -> None:
    if (e1, p1) != (e2, p2):
        assert send_key(SECRET, e1, p1) != send_key(SECRET, e2, p2)


def test_message_id_round_trips_through_headers() -> None:
    first, second = send_key(SECRET, 1, 1), send_key(SECRET, 1, 2)
    first_id = message_id_for(first, "northwind-analytics.test")
    assert first_id == f"<rg.{first}@northwind-analytics.test>"
    references = f"<CAFoo123@mail.gmail.test> {first_id}\r\n {message_id_for(second, 'x.test')}"
    assert send_keys_in(references) == [second, first]  # newest first
    assert send_keys_in(first_id.upper()) == [first]
    assert send_keys_in(first_id.strip("<>")) == [first]


def test_send_keys_in_ignores_other_ids() -> None:
    assert send_keys_in("") == []
    assert (
        send_keys_in("<CAFoo@mail.test> <rg.123@x.test> <rg.nothex0123456789abcdef0123456789@x.test>") == []
    )


def test_unsubscribe_token_round_trip() -> None:
    key = send_key(SECRET, 5, 1)
    token = unsubscribe_token(SECRET, key)
    assert token.startswith(key + ".")
    assert check_unsubscribe_token(SECRET, token) == key


def test_tampered_tokens_are_rejected() -> None:
    key = send_key(SECRET, 5, 1)
    token = unsubscribe_token(SECRET, key)
    other = send_key(SECRET, 6, 1)
    sig = token.split(".", 1)[1]
    flipped = sig[:-1] + ("0" if sig[-1] != "0" else "1")
    for bad in (
        f"{key}.{flipped}",
        f"{other}.{sig}",  # a signature moved to another step
        key,
        f"{key}.",
        "",
        ".",
        token + "0",
        unsubscribe_token("another workspace", key),  # tenant isolation
    ):
        assert check_unsubscribe_token(SECRET, bad) is None, bad


KEY = "0123456789abcdef0123456789abcdef"
OURS = f"<rg.{KEY}@northwind-analytics.test>"


@pytest.mark.parametrize(
    "value",
    [
        OURS,
        f"rg.{KEY}@northwind-analytics.test",  # no angle brackets
        f"< rg.{KEY}@northwind-analytics.test >",  # spaces inside them
        f"<rg.{KEY}\r\n @northwind-analytics.test>",  # folded inside the id
        f"<CAF+zq=1@mail.gmail.test> {OURS}",  # a foreign id before ours
        f"{OURS}(Dana Whitfield's message of Mon, 7 Dec 2026)",  # a comment glued on
        f'Dana\'s message of "Mon, 7 Dec 2026 09:00" {OURS}',  # the old phrase form
        f"<a@x.test>,{OURS};",  # commas and semicolons between ids
        f"\x00{OURS}\x00",  # control characters around it
    ],
)
def test_our_key_is_found_in_real_header_shapes(value: str) -> None:
    assert send_keys_in(value) == [KEY]
    assert parent_id(message_ids_in(value)) == OURS


def test_an_id_inside_a_comment_does_not_count() -> None:
    assert send_keys_in(f"<a@x.test> (see {OURS})") == []


def test_message_ids_are_normalised() -> None:
    assert message_ids_in("< a b@x.test >  c@y.test (comment <d@z.test>) <e@w>") == [
        "<ab@x.test>",
        "<c@y.test>",
        "<e@w>",
    ]
    assert normalize_message_id("\r\n <Long.Id.Folded@prod.outlook.test>\r\n") == (
        "<Long.Id.Folded@prod.outlook.test>"
    )
    assert normalize_message_id("") is None
    assert normalize_message_id("(only a comment)") is None


def test_long_references_keep_our_ids_wherever_they_are() -> None:
    foreign = [f"<m{i}@list.test>" for i in range(120)]
    near_end = [*foreign[:110], OURS, *foreign[110:]]
    kept = thread_references(message_ids_in(" ".join(near_end)))
    assert len(kept) == 50 and OURS in kept and kept[-1] == foreign[-1]
    at_root = thread_references([OURS, *foreign])
    assert at_root[0] == OURS and len(at_root) == 50
    assert thread_references(foreign[:10]) == tuple(foreign[:10])


def test_the_number_of_ids_read_is_bounded() -> None:
    assert len(message_ids_in(" ".join(f"<{i}@x.test>" for i in range(5000)))) == MAX_IDS


_FOREIGN_ID = st.from_regex(r"<[A-Za-z0-9.+=_-]{1,30}@[a-z0-9.-]{1,20}\.test>", fullmatch=True)


@st.composite
def header_shapes(draw: st.DrawFn) -> tuple[str, str]:
    """A References/In-Reply-To value with one id of ours among foreign ones, damaged the way
    clients and transports damage them; returns (value, our key)."""
    key = draw(st.from_regex(r"[0-9a-f]{32}", fullmatch=True))
    ours = f"rg.{key}@{draw(st.sampled_from(['northwind-analytics.test', 'mail.x.test']))}"
    ours = draw(
        st.sampled_from(
            [
                f"<{ours}>",
                ours,
                f"< {ours} >",
                f"<{ours}>(Dana)",
                f"<{ours.replace('@', chr(13) + chr(10) + ' @')}>",
            ]
        )
    )
    before = draw(st.lists(_FOREIGN_ID, max_size=80))
    after = draw(st.lists(_FOREIGN_ID, max_size=8))
    separator = draw(st.sampled_from([" ", "\r\n ", "\r\n\t", ", ", "  "]))
    return separator.join([*before, ours, *after]), key


@given(header_shapes())
def test_random_header_shapes_around_our_id_still_find_it(shape: tuple[str, str]) -> None:
    value, key = shape
    assert key in send_keys_in(value)
    ids = message_ids_in(value)
    assert key in send_keys_in(" ".join(thread_references(ids)))
    assert key in send_keys_in(parent_id(ids) or "")
