"""Generated inbound mail for the benchmarks: human replies, out-of-office notices and
bounces, addressed to leads of a bench workspace and threaded on Message-IDs we sent."""

from __future__ import annotations

import random
from collections.abc import Iterator
from email.message import EmailMessage
from email.utils import format_datetime

from bench.common import START

HUMAN = [
    "Thanks for reaching out. Could we talk on Thursday afternoon?",
    "Not interested right now, maybe next quarter.",
    "Who else uses this? Send me pricing please.",
]
OOO = [
    ("Out of office", "I am out of the office until 2026-12-21 with limited access to email."),
    ("Abwesenheitsnotiz", "Ich bin bis zum 21.12.2026 nicht im Büro."),
    ("Absence", "Je suis absent jusqu'au 21 décembre 2026."),
]


def _base(sender: str, subject: str, msgid: str, reply_to: str | None) -> EmailMessage:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "rep@seller.test"
    msg["Subject"] = subject
    msg["Date"] = format_datetime(START)
    msg["Message-ID"] = msgid
    if reply_to:
        msg["In-Reply-To"] = reply_to
        msg["References"] = reply_to
    return msg


def human(i: int, sender: str, reply_to: str | None) -> bytes:
    msg = _base(sender, "Re: Hello", f"<h{i}@client.test>", reply_to)
    msg.set_content(f"{HUMAN[i % len(HUMAN)]}\n\nOn Mon, Rep wrote:\n> Hi, first.\n")
    return bytes(msg)


def out_of_office(i: int, sender: str, reply_to: str | None) -> bytes:
    subject, body = OOO[i % len(OOO)]
    msg = _base(sender, f"{subject}: Hello", f"<o{i}@client.test>", reply_to)
    msg["Auto-Submitted"] = "auto-replied"
    msg.set_content(body)
    return bytes(msg)


def bounce(i: int, recipient: str, original_id: str | None) -> bytes:
    """A multipart/report DSN (RFC 3464) for a hard bounce, with the original headers."""
    return (
        "From: Mail Delivery System <MAILER-DAEMON@mx.client.test>\r\n"
        "To: rep@seller.test\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        f"Date: {format_datetime(START)}\r\n"
        f"Message-ID: <b{i}@mx.client.test>\r\n"
        "Auto-Submitted: auto-replied\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n'
        "--B\r\nContent-Type: text/plain\r\n\r\n"
        f"<{recipient}>: host mx.client.test said: 550 5.1.1 User unknown\r\n\r\n"
        "--B\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.client.test\r\n\r\n"
        f"Final-Recipient: rfc822; {recipient}\r\nAction: failed\r\nStatus: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 User unknown\r\n\r\n"
        "--B\r\nContent-Type: text/rfc822-headers\r\n\r\n"
        f"Message-ID: {original_id or '<none@x>'}\r\nSubject: Hello\r\nTo: {recipient}\r\n\r\n"
        "--B--\r\n"
    ).encode()


def mix(targets: list[tuple[str, str | None]], count: int, seed: int = 1) -> Iterator[bytes]:
    """`count` messages: 60% human replies, 25% out-of-office, 15% hard bounces, for
    (address, Message-ID we sent) pairs."""
    rng = random.Random(seed)
    for i in range(count):
        address, msgid = targets[i % len(targets)]
        roll = rng.random()
        if roll < 0.60:
            yield human(i, address, msgid)
        elif roll < 0.85:
            yield out_of_office(i, address, msgid)
        else:
            yield bounce(i, address, msgid)
