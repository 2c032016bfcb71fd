"""Hard-bounce recall (issue 22, item 5): permanent failures in the wordings servers write —
expired, closed or unavailable mailboxes in other languages (accented, as servers localise them
in a DSN's UTF-8 fields or a notice's text, and folded to ASCII, as SMTP replies carry them),
"recipient does not exist" shapes, and a report on several recipients — are hard; what is only
temporary or about the message stays soft. Messages are built here; no corpus file is copied."""

from __future__ import annotations

import unicodedata

import pytest

from replyguard.domain.inbound.classify import classify
from replyguard.domain.states import ReplyKind

HEAD = """From: MAILER-DAEMON@mx.dest.example
To: dana@northwind.test
Subject: Undelivered Mail Returned to Sender
Date: Mon, 07 Dec 2026 09:00:00 +0000
MIME-Version: 1.0
"""


def dsn(status: str, diagnostic: str) -> bytes:
    return (
        HEAD
        + f"""Content-Type: multipart/report; report-type=delivery-status; boundary="BB"

--BB
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

Delivery to the following recipient failed permanently.

--BB
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.dest.example

Final-Recipient: rfc822; lead@dest.example
Action: failed
Status: {status}
Diagnostic-Code: smtp; {diagnostic}

--BB--
"""
    ).encode("utf-8")


def postfix_notice(diagnostic: str) -> bytes:
    return (
        HEAD
        + f"""Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

This is the mail system at host mx.dest.example.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

<lead@dest.example>: host mx.dest.example said: 550 {diagnostic}
"""
    ).encode("utf-8")


def ascii_folded(text: str) -> str:
    return unicodedata.normalize("NFKD", text.replace("ł", "l")).encode("ascii", "ignore").decode()


LOCALISED = [
    "Konto wygasło",
    "Skrzynka odbiorcy wygasła",
    "Konto zostało zablokowane",
    "Nie ma takiego użytkownika",
    "Odbiorca nie istnieje",
    "Das Postfach ist nicht mehr verfügbar",
    "Empfänger nicht gefunden",
    "Ce compte a expiré",
    "Adresse introuvable",
    "La cuenta de correo ha caducado",
    "Destinatario inexistente",
    "La casella di posta è scaduta",
    "A conta de email expirou",
    "Deze mailbox is verlopen",
    "Deze ontvanger bestaat niet",
    "Användaren finns inte",
    "Адрес больше не обслуживается",
    "Адресат не найден",
]
ENGLISH = [
    "Mailbox expired",
    "This account has expired",
    "Mailbox unavailable: account closed",
    "Mailbox no longer available",
    "The recipient's mailbox doesn't exist",
    "That recipient address doesn't exist",
    "Requested action not taken: recipient doesn't exist",
    "The email address you entered couldn't be found",
    "Addressee unknown, relay=mx",
    "No such account",
    "account does not exist",
    "recipient is invalid",
    "Account deactivated",
    "Mailbox has been closed",
]


@pytest.mark.parametrize("diagnostic", LOCALISED + ENGLISH)
def test_a_permanent_failure_of_the_mailbox_is_hard_in_a_dsn_with_utf8_fields(diagnostic: str) -> None:
    assert classify(dsn("5.0.0", f"550 {diagnostic}")).kind is ReplyKind.BOUNCE_HARD


@pytest.mark.parametrize(
    "diagnostic", [d for d in LOCALISED if ascii_folded(d).strip()]
)  # Cyrillic has no ASCII form
def test_the_same_wordings_folded_to_ascii_are_hard(diagnostic: str) -> None:
    assert classify(dsn("5.0.0", f"550 {ascii_folded(diagnostic)}")).kind is ReplyKind.BOUNCE_HARD


@pytest.mark.parametrize("diagnostic", LOCALISED + ENGLISH)
def test_the_same_wordings_in_a_notice_without_a_dsn_are_hard(diagnostic: str) -> None:
    assert classify(postfix_notice(diagnostic)).kind is ReplyKind.BOUNCE_HARD


@pytest.mark.parametrize(
    ("status", "diagnostic"),
    [
        ("5.4.7", "550 5.4.7 Delivery time expired"),
        ("5.0.0", "550 Message expired after 5 days in queue"),
        ("4.2.1", "450 4.2.1 Mailbox temporarily disabled, account closed for maintenance"),
        ("5.2.2", "552 5.2.2 Mailbox full"),
        ("5.0.0", "550 Skrzynka odbiorcy jest pełna"),
        ("4.0.0", "451 Konto zostało zablokowane tymczasowo"),
    ],
)
def test_what_is_temporary_or_about_the_message_stays_soft(status: str, diagnostic: str) -> None:
    assert classify(dsn(status, diagnostic)).kind is ReplyKind.BOUNCE_SOFT


MULTI = (
    HEAD.replace("MAILER-DAEMON@mx", "postmaster@")
    + """Content-Type: multipart/report; report-type=delivery-status; boundary="BB"

--BB
Content-Type: text/plain; charset=utf-8

Delivery has failed to these recipients or groups:

team-archive@dest.example
The recipient's mailbox is full and can't accept messages now.

lead@dest.example
The email address you entered couldn't be found.

--BB
Content-Type: message/delivery-status

Reporting-MTA: dns;EX01.dest.example

Final-Recipient: rfc822;team-archive@dest.example
Action: failed
Status: 5.2.2
Diagnostic-Code: smtp;554 5.2.2 mailbox full

Final-Recipient: rfc822;lead@dest.example
Action: failed
Status: 5.1.1
Diagnostic-Code: smtp;550 5.1.1 RESOLVER.ADR.RecipNotFound; not found

--BB
Content-Type: text/rfc822-headers

From: Dana <dana@northwind.test>
To: Lead <lead@dest.example>
Subject: Reporting for Brightline
Message-ID: <rg.abc@mail.northwind.test>

--BB--
"""
).encode()


def test_a_report_on_several_recipients_is_read_for_the_one_we_wrote_to() -> None:
    c = classify(MULTI)
    assert c.kind is ReplyKind.BOUNCE_HARD
    assert c.bounce is not None and (c.bounce.recipient, c.bounce.reason) == (
        "lead@dest.example",
        "userunknown",
    )
