"""Properties of matching, for random inputs (hypothesis), through the real ingest path.

- Random display names, encodings and real addresses: a message is never attributed to a
  lead whose address is not the real From.
- Random header shapes around our Message-IDs still match the thread.
- Two copies of one reply with random transport damage (a folded Message-ID, reordered
  headers, added Received lines, line ends, a body rebuilt from parsed fields) have one effect.

Example counts are modest: each database example builds on one workspace per test.
"""

from __future__ import annotations

import base64
import itertools
import random
from collections.abc import Callable
from email.header import Header
from email.utils import formataddr

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.inbound.classify import classify
from replyguard.domain.inbound.parse import parse_message
from replyguard.entrypoints.http.compose import compose, header_pairs
from replyguard.service_layer.inbound.ingest import ingest_raw
from tests.support.identity import PRIYA, first_sent, raw_mail, reply_headers, sent_workspace
from tests.support.scenario import REPORTS

LEAD_ADDRESSES = [
    PRIYA,
    "priya.raman.home@gmail-like.test",
    "marc.keller@brightline-logistics.test",
    "aisha@meridian-health.test",
]
_IDS = itertools.count()  # a fresh Message-ID per example: hypothesis re-seeds `random`
DB_SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@st.composite
def from_headers(draw: st.DrawFn) -> tuple[str, str]:
    """(raw From value, the real address): a display name that may hold any lead's address,
    brackets, quotes and commas, written the ways clients and forgers write it."""
    real = draw(st.sampled_from([*LEAD_ADDRESSES, "intruder@elsewhere.test", "Priya@FernHollow.test"]))
    decoy = draw(st.sampled_from(LEAD_ADDRESSES))
    name = draw(
        st.lists(
            st.one_of(
                st.just(decoy),
                st.just(f"<{decoy}>"),
                st.sampled_from(['"', ",", "<", ">", "(", ")", ";", "Ñ", " "]),
                st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), max_size=8),
            ),
            max_size=6,
        ).map("".join)
    )
    style = draw(st.sampled_from(["formataddr", "b-word", "q-word-sloppy", "raw-unquoted", "header-class"]))
    if style == "formataddr":
        value = formataddr((name, real), charset="utf-8")
    elif style == "b-word":
        value = f"=?utf-8?b?{base64.b64encode(name.encode()).decode()}?= <{real}>"
    elif style == "q-word-sloppy":  # an encoder that leaves specials raw inside the word
        value = f"=?utf-8?q?{name.replace(' ', '_')}?= <{real}>"
    elif style == "raw-unquoted":
        value = f"{name} <{real}>"
    else:
        value = f"{Header(name, 'utf-8').encode()} <{real}>"
    return value.replace("\r", " ").replace("\n", " "), real


def _raw_with_from(value: str, n: int) -> bytes:
    return raw_mail(
        [
            ("From", value),
            ("To", "dana@northwind-analytics.test"),
            ("Subject", "hello"),
            ("Message-ID", f"<p{n}@c.test>"),
        ],
        "Please stop emailing me.\n",
    )


@settings(max_examples=300, deadline=None)
@given(from_headers())
def test_the_sender_is_the_real_address_or_no_one(case: tuple[str, str]) -> None:
    value, real = case
    found = classify(_raw_with_from(value, 0)).from_address
    assert found is None or found.lower() == real.lower(), (value, found)


@DB_SETTINGS
@given(case=from_headers())
def test_no_message_is_attributed_to_a_lead_who_did_not_send_it(
    app: App, clock: FixedClock, case: tuple[str, str]
) -> None:
    if not _built(app):
        sent_workspace(app, clock)
    value, real = case
    result = ingest_raw(app, _raw_with_from(value, next(_IDS)), "imap")
    with app.uow() as uow:
        for lead_id in result.lead_ids if result.status == "matched" else ():
            lead = uow.session.get_one(m.Lead, lead_id)
            addresses = set(
                uow.session.scalars(
                    select(m.ContactAddress.address).where(m.ContactAddress.contact_id == lead.contact_id)
                )
            )
            assert real.lower() in addresses, (value, real, addresses)


def _built(app: App) -> bool:
    with app.uow() as uow:
        return bool(uow.session.scalar(select(func.count()).select_from(m.Step)))


@st.composite
def thread_shapes(draw: st.DrawFn) -> dict[str, str]:
    """Keyword arguments for reply_headers: our id (a placeholder) in a damaged header."""
    ours = draw(st.sampled_from(["{id}", "{bare}", "< {bare} >", "{id}(Dana)", "{id} (re: pricing)"]))
    foreign = draw(
        st.lists(st.from_regex(r"<[a-z0-9.]{1,12}@[a-z]{1,8}\.test>", fullmatch=True), max_size=70)
    )
    at = draw(st.integers(0, len(foreign)))
    sep = draw(st.sampled_from([" ", "\r\n ", "\r\n\t", ","]))
    value = sep.join([*foreign[:at], ours, *foreign[at:]])
    return {draw(st.sampled_from(["in_reply_to", "references"])): value}


@DB_SETTINGS
@given(shape=thread_shapes(), lead=st.sampled_from([*LEAD_ADDRESSES[2:], PRIYA]))
def test_random_header_shapes_around_our_message_id_still_match(
    app: App, clock: FixedClock, shape: dict[str, str], lead: str
) -> None:
    if not _built(app):
        sent_workspace(app, clock)
    ours = first_sent(app, lead, REPORTS).message_id
    kwargs = {k: v.format(id=ours, bare=ours.strip("<>")) for k, v in shape.items()}
    headers = reply_headers(
        "someone@unknown-sender.test", "Re: ?", message_id=f"<t{next(_IDS)}@c.test>", **kwargs
    )
    result = ingest_raw(app, raw_mail(headers), "imap")
    assert result.status == "matched" and "match:thread" in result.evidence, kwargs
    with app.uow() as uow:
        expected = uow.session.scalar(select(m.Step.lead_id).where(m.Step.message_id == ours))
    assert result.lead_ids == (expected,)


def _fold_message_id(raw: bytes, rng: random.Random) -> bytes:
    return raw.replace(b"Message-ID: ", b"Message-ID:\r\n ", 1)


def _reorder_headers(raw: bytes, rng: random.Random) -> bytes:
    head, _, body = raw.partition(b"\r\n\r\n")
    fields: list[bytes] = []
    for line in head.split(b"\r\n"):
        if line[:1] in (b" ", b"\t") and fields:
            fields[-1] += b"\r\n" + line
        else:
            fields.append(line)
    rng.shuffle(fields)
    return b"\r\n".join(fields) + b"\r\n\r\n" + body


def _add_received(raw: bytes, rng: random.Random) -> bytes:
    hops = b"".join(
        b"Received: from relay%d.test by mx.northwind.test; Mon, 7 Dec 2026 10:00:%02d +0000\r\n" % (i, i)
        for i in range(rng.randint(1, 4))
    )
    return hops + raw


def _bare_lf(raw: bytes, rng: random.Random) -> bytes:
    return raw.replace(b"\r\n", b"\n")


def _rebuild(raw: bytes, rng: random.Random) -> bytes:
    """What a webhook gives when it was not configured to post raw MIME: parsed fields."""
    msg = parse_message(raw)
    head = raw.replace(b"\r\n", b"\n").partition(b"\n\n")[0].decode("utf-8", "replace")
    text = msg.get_payload(decode=True)
    assert isinstance(text, bytes)
    return compose(header_pairs(head), text.decode("utf-8", "replace"), None)


Damage = Callable[[bytes, random.Random], bytes]
DAMAGE: list[Damage] = [_fold_message_id, _reorder_headers, _add_received, _bare_lf, _rebuild]


@DB_SETTINGS
@given(
    body=st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=200),
    damage=st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=4),
    seed=st.integers(0, 2**32),
    copy_first=st.booleans(),
)
def test_two_copies_of_one_reply_have_one_effect(
    app: App, clock: FixedClock, body: str, damage: list[Damage], seed: int, copy_first: bool
) -> None:
    if not _built(app):
        sent_workspace(app, clock)
    ours = first_sent(app, PRIYA, REPORTS)
    rng = random.Random(seed)
    original = raw_mail(
        reply_headers(
            f"Priya Raman <{PRIYA}>",
            f"Re: {ours.subject}",
            message_id=f"<c{next(_IDS)}.{seed}@mail.fernhollow.test>",
            in_reply_to=ours.message_id,
        ),
        body + "\n",
    )
    copy = original
    for step in damage:
        copy = step(copy, rng)
    before = _replies(app)
    first, second = (copy, original) if copy_first else (original, copy)
    results = [ingest_raw(app, first, "imap"), ingest_raw(app, second, "webhook")]
    assert _replies(app) - before == 1, [r.status for r in results]
    assert results[1].duplicate or results[1].status == "duplicate"


def _replies(app: App) -> int:
    with app.uow() as uow:
        return uow.session.scalar(select(func.count()).select_from(m.Reply)) or 0
