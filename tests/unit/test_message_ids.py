"""Send keys, Message-IDs and unsubscribe tokens."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from replyguard.domain.message_ids import (
    check_unsubscribe_token,
    message_id_for,
    send_key,
    send_keys_in,
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
