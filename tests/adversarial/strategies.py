"""Hypothesis strategies for hostile inbound mail, and the invariants every source must keep.

`messages(threads)` draws raw messages that answer our emails (or pretend to) with random
Unicode in every field, odd charsets and transfer encodings, NULs, 8-bit and encoded-word
headers, headers of random size and random MIME shapes. `multipart(fields)` draws the
multipart/form-data bodies providers (and attackers) post: random boundaries, CRLF or LF,
duplicate and nameless parts.

The invariants (checked by every property test, on SQLite and PostgreSQL):
* no answer is a 5xx;
* nothing is lost: a message that was accepted is stored with a final status, and an
  authenticated request that was refused is kept as `refused` for a person;
* nothing blocks another message: a good message after each hostile one takes effect;
* no email goes out after a reply (the worker runs on afterwards).
"""

from __future__ import annotations

import base64
import dataclasses
import os
from datetime import timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.inbound.status import InboundStatus
from replyguard.domain.states import ReplyKind, StepState
from tests.support.scenario import run_days

#: Few examples per source and database, the same ones on every run: the suite must stay
#: fast and never flaky. REPLYGUARD_FUZZ_EXAMPLES=500 explores new random ones instead.
_FUZZ = os.environ.get("REPLYGUARD_FUZZ_EXAMPLES", "")
PROPERTY_SETTINGS = settings(
    max_examples=int(_FUZZ) if _FUZZ.isdigit() else 20,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
    derandomize=not _FUZZ,
    database=None,
)
FINAL = {s.value for s in InboundStatus} - {InboundStatus.STORED.value}
RESERVED = "marc.keller@brightline-logistics.test"  # never a target: the last good reply is his

any_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
wild_text = st.text(st.characters(exclude_categories=()), max_size=60)  # surrogates and NULs too
charsets = st.sampled_from(
    ["utf-8", "UTF-8", "us-ascii", "iso-8859-1", "utf-16", "utf-7", "unicode-escape", "gb2312", "x-bogus", ""]
)
encodings = st.sampled_from(["7bit", "8bit", "quoted-printable", "base64", "binary", "x-uuencode", ""])
header_names = st.from_regex(r"\A[A-Za-z][A-Za-z0-9-]{0,30}\Z")


@dataclasses.dataclass(frozen=True)
class Thread:
    email: str
    message_id: str
    subject: str


def threads(app: App) -> list[Thread]:
    """Every first email sent so far, except to the reserved lead."""
    with app.uow() as uow:
        rows = uow.session.execute(
            select(m.ContactAddress.address, m.Step.message_id, m.Step.subject)
            .join(m.Lead, m.Lead.id == m.Step.lead_id)
            .join(m.ContactAddress, m.ContactAddress.contact_id == m.Lead.contact_id)
            .where(m.Step.state == StepState.SENT, m.ContactAddress.is_primary.is_(True))
        ).all()
    return [Thread(a, mid, s) for a, mid, s in rows if a != RESERVED]


def _header_value(draw: st.DrawFn, value: str) -> bytes:
    style = draw(st.sampled_from(["utf8", "encoded-word", "latin1"]))
    if style == "encoded-word":  # NULs and lone surrogates too, as senders' software writes them
        return b"=?utf-8?b?" + base64.b64encode(value.encode("utf-8", "surrogatepass")) + b"?="
    if style == "latin1":
        return value.encode("latin-1", "replace")
    return value.encode("utf-8", "surrogatepass")


@st.composite
def messages(draw: st.DrawFn, targets: list[Thread]) -> bytes:
    """One hostile message, usually in the thread of one of `targets`."""
    thread = draw(st.sampled_from(targets)) if targets and draw(st.booleans()) else None
    sender = (
        thread.email if thread else draw(st.sampled_from(["x@elsewhere.test", "p" * 400 + "@x.test", ""]))
    )
    lines = [
        b"From: " + _header_value(draw, draw(any_text)) + b" <" + sender.encode() + b">",
        b"To: dana@northwind.test",
        b"Subject: " + _header_value(draw, draw(wild_text) if not thread else "Re: " + thread.subject),
        b"Message-ID: <" + _header_value(draw, draw(wild_text)) + b"@fuzz.test>",
    ]
    if thread:
        lines += [b"In-Reply-To: " + thread.message_id.encode(), b"References: " + thread.message_id.encode()]
    for name, value in draw(st.lists(st.tuples(header_names, wild_text), max_size=4)):
        lines.append(name.encode() + b": " + _header_value(draw, value))
    padding = draw(st.sampled_from([0, 0, 1000, 20_000]))
    if padding:
        lines.append(b"X-Padding: " + b"p" * padding)
    charset, encoding = draw(charsets), draw(encodings)
    body = draw(
        st.one_of(wild_text.map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=200))
    )
    if encoding == "base64":
        body = base64.encodebytes(body)
    if draw(st.booleans()):
        boundary = draw(st.sampled_from(["b1", "=_x", "a" * 80, ""]))
        lines.append(
            f"Content-Type: multipart/{draw(st.sampled_from(['mixed', 'report', 'alternative']))}; "
            f'boundary="{boundary}"'.encode()
        )
        part = f"Content-Type: text/plain; charset={charset}\r\nContent-Transfer-Encoding: {encoding}\r\n\r\n"
        body = (
            b"--"
            + boundary.encode()
            + b"\r\n"
            + part.encode()
            + body
            + b"\r\n--"
            + boundary.encode()
            + b"--\r\n"
        )
    else:
        lines.append(f"Content-Type: text/plain; charset={charset}".encode())
        lines.append(f"Content-Transfer-Encoding: {encoding}".encode())
    newline = draw(st.sampled_from([b"\r\n", b"\n"]))
    return newline.join(lines) + newline + newline + body


@st.composite
def multipart(draw: st.DrawFn, fields: list[tuple[str, bytes]]) -> tuple[str, bytes]:
    """(content type, body) of a multipart/form-data post of `fields`, in a random shape."""
    boundary = draw(st.sampled_from(["----rgfuzz", "x" * 70, "b" * 300, "a'b(c)d+e_f,g-h.i/j:k=l?m"]))
    newline = draw(st.sampled_from([b"\r\n", b"\n"]))
    fields = list(fields) + draw(
        st.lists(st.tuples(any_text, wild_text.map(lambda t: t.encode("utf-8", "surrogatepass"))), max_size=3)
    )
    chunks = []
    for name, value in draw(st.permutations(fields)):
        disposition = f'form-data; name="{name}"'
        if draw(st.integers(0, 9)) == 0:
            disposition = draw(
                st.sampled_from(["form-data", "form-data; filename*=utf-8''%FF%FE", "attachment"])
            )
        chunks.append(
            b"--"
            + boundary.encode()
            + newline
            + f"Content-Disposition: {disposition}".encode()
            + newline
            + newline
            + value
            + newline
        )
    closing = b"--" + boundary.encode() + b"--" + newline if draw(st.integers(0, 9)) else b""
    return f"multipart/form-data; boundary={boundary}", b"".join(chunks) + closing


def good_message(n: int) -> bytes:
    """A plain newsletter from a stranger: it must reach its final status (unmatched)."""
    return (
        f"From: News <news@digest.test>\r\nTo: dana@northwind.test\r\nSubject: Digest {n}\r\n"
        f"Message-ID: <digest-{n}@digest.test>\r\n\r\nIssue {n}.\r\n"
    ).encode()


def inbound_rows(app: App) -> dict[str, int]:
    with app.uow() as uow:
        return dict(
            uow.session.execute(
                select(m.InboundMessage.status, func.count()).group_by(m.InboundMessage.status)
            ).all()
        )


def assert_nothing_left_stored(app: App) -> None:
    """Every stored message reached a final status: none is pending behind another."""
    assert inbound_rows(app).get(InboundStatus.STORED, 0) == 0


def assert_no_send_after_a_reply(app: App, clock: FixedClock) -> None:
    """Run the worker for three more days; no lead that answered gets another email."""
    run_days(app, clock, 3, step=timedelta(hours=3))
    stopping = [ReplyKind.HUMAN_REPLY, ReplyKind.UNSUBSCRIBE, ReplyKind.BOUNCE_HARD]
    with app.uow() as uow:
        late = uow.session.execute(
            select(m.Step.id, m.Reply.id)
            .join(m.Reply, m.Reply.lead_id == m.Step.lead_id)
            .where(
                m.Reply.kind.in_(stopping),
                m.Step.state == StepState.SENT,
                m.Step.sent_at > m.Reply.recorded_at,
            )
        ).all()
    assert late == []
