"""Builders of hostile and broken messages, in the shapes real mail takes.

Each builder returns raw bytes. The NUL cases follow real mail: a delivery report whose
text part is binary data in base64 labelled as text (the shape of a real bounce in the
shared bounce corpus), quoted-printable `=00`, UTF-16 text labelled UTF-8, an RFC 2047
encoded word carrying a NUL, and a NUL in the Message-ID itself.
"""

from __future__ import annotations

import base64
from email.utils import format_datetime

from replyguard.bootstrap import App
from tests.integration.test_http_inbound import PRIYA, first_sent

# A PNG signature and the start of its IHDR chunk: binary, with NUL bytes, as such a bounce
# carries it in a part labelled `text/plain; charset=ISO-8859-1`.
PNG_START = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000800000008008060000")


def threaded(
    app: App,
    *,
    body: bytes,
    headers: str = "",
    cte: str = "8bit",
    charset: str = "utf-8",
    subject: str | None = None,
    sender: str = f"Priya Raman <{PRIYA}>",
    message_id: str = "<hostile-1@mail.fernhollow.test>",
) -> bytes:
    """A reply in the thread of our first email to Priya, with the given body and headers."""
    sent = first_sent(app)
    head = (
        f"From: {sender}\r\n"
        f"To: Dana <dana@northwind.test>\r\n"
        f"Subject: {subject if subject is not None else 'Re: ' + sent.subject}\r\n"
        f"Date: {format_datetime(app.clock.now())}\r\n"
        f"Message-ID: {message_id}\r\n"
        f"In-Reply-To: {sent.message_id}\r\n"
        f"References: {sent.message_id}\r\n"
        f"MIME-Version: 1.0\r\n"
        f"Content-Type: text/plain; charset={charset}\r\n"
        f"Content-Transfer-Encoding: {cte}\r\n"
        f"{headers}"
    )
    return head.encode() + b"\r\n" + body


def qp_nul(app: App) -> bytes:
    return threaded(
        app,
        body=b"Yes please=00, call me on Thursday.=0D=0A\r\n",
        cte="quoted-printable",
        message_id="<qp-nul@mail.fernhollow.test>",
    )


def utf16_as_utf8(app: App) -> bytes:
    return threaded(
        app, body="Yes, Thursday works.\r\n".encode("utf-16-le"), message_id="<utf16@mail.fernhollow.test>"
    )


def base64_nul(app: App) -> bytes:
    body = base64.encodebytes(b"Thursday is good.\x00\x00 Priya\n")
    return threaded(app, body=body, cte="base64", message_id="<b64-nul@mail.fernhollow.test>")


def encoded_word_nul(app: App) -> bytes:
    sent = first_sent(app)
    return threaded(
        app,
        body=b"Sounds good, Thursday.\r\n",
        subject=f"=?utf-8?q?Re=3A_{sent.subject.replace(' ', '_')}=00?=",
        message_id="<ew-nul@mail.fernhollow.test>",
    )


def nul_in_message_id(app: App) -> bytes:
    return threaded(app, body=b"Thursday then.\r\n", message_id="<nul\x00id@mail.fernhollow.test>")


def long_local_part(app: App) -> bytes:
    return threaded(
        app,
        body=b"Thursday works for me.\r\n",
        sender=f"Priya <{'p' * 400}@fernhollow.test>",
        message_id="<long-from@mail.fernhollow.test>",
    )


def long_domain(app: App) -> bytes:
    domain = ".".join(["sub" * 20] * 5) + ".fernhollow.test"  # 300+ characters
    return threaded(
        app,
        body=b"Thursday works for me.\r\n",
        sender=f"Priya <priya@{domain}>",
        message_id="<long-domain@mail.fernhollow.test>",
    )


def utf7_surrogate(app: App) -> bytes:
    """A UTF-7 body and subject that decode to a lone surrogate (unencodable as UTF-8)."""
    return threaded(
        app,
        body=b"Thursday works +2D0-\r\n",
        charset="utf-7",
        subject="=?utf-7?q?Re=3A_hello_+2D0-?=",
        message_id="<utf7@mail.fernhollow.test>",
    )


def escape_charset(app: App) -> bytes:
    """A charset label that makes Python's codec turn backslash escapes into NUL and surrogates."""
    return threaded(
        app,
        body=b"Thursday\\x00 works \\ud83d\r\n",
        charset="unicode-escape",
        message_id="<escape@mail.fernhollow.test>",
    )


def good_reply(app: App, email: str, product: str, message_id: str) -> bytes:
    """A plain, well-formed answer to our first email to `email`: it must take effect."""
    sent = first_sent(app, email, product)
    return (
        f"From: <{email}>\r\nTo: Dana <dana@northwind.test>\r\nSubject: Re: {sent.subject}\r\n"
        f"Date: {format_datetime(app.clock.now())}\r\nMessage-ID: {message_id}\r\n"
        f"In-Reply-To: {sent.message_id}\r\nReferences: {sent.message_id}\r\n\r\n"
        "Happy to talk next week.\r\n"
    ).encode()


def bounce_with_binary_text(app: App) -> bytes:
    """A delivery report for Priya whose first part is base64 binary labelled as Latin-1 text."""
    sent = first_sent(app)
    boundary = "==tTrp8ZBP076693"
    png = base64.encodebytes(PNG_START * 4).decode()
    return (
        "From: postmaster@fernhollow.test\r\n"
        "To: <dana@northwind.test>\r\n"
        "Subject: Undelivered Mail Returned to Sender\r\n"
        f"Date: {format_datetime(app.clock.now())}\r\n"
        "Message-ID: <0000000000.1111@fernhollow.test>\r\n"
        "MIME-Version: 1.0\r\n"
        f'Content-Type: multipart/report; report-type=delivery-status; boundary="{boundary}"\r\n'
        "\r\n"
        f"--{boundary}\r\n"
        "Content-Type: text/plain; charset=ISO-8859-1\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\n"
        f"{png}\r\n"
        f"--{boundary}\r\n"
        "Content-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.fernhollow.test\r\n\r\n"
        f"Final-Recipient: rfc822; {PRIYA}\r\n"
        "Action: failed\r\n"
        "Status: 5.1.1\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n"
        f"--{boundary}\r\n"
        "Content-Type: text/rfc822-headers\r\n\r\n"
        "From: Dana <dana@northwind.test>\r\n"
        f"To: {PRIYA}\r\n"
        f"Subject: {sent.subject}\r\n"
        f"Message-ID: {sent.message_id}\r\n\r\n"
        f"--{boundary}--\r\n"
    ).encode()
