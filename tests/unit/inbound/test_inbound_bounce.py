"""Bounces: RFC 3464 DSNs, non-standard NDRs, hard versus soft, and what is NOT a bounce."""

from __future__ import annotations

import pytest

from replyguard.domain.states import ReplyKind

ORIGINAL_ID = "<rg.0123456789abcdef0123456789abcdef@example.com>"


def dsn(
    status: str,
    diagnostic: str,
    *,
    action: str = "failed",
    returned: str = "rfc822",
    subject: str = "Undelivered Mail Returned to Sender",
    notice: str = "Delivery to the following recipient failed.",
) -> bytes:
    """A Postfix-shaped multipart/report DSN returning our original message."""
    if returned == "rfc822":
        returned_part = (
            "Content-Type: message/rfc822\r\n\r\n"
            f"From: sales@example.com\r\nTo: lead@example.org\r\nMessage-ID: {ORIGINAL_ID}\r\n"
            "Subject: Q3 offer\r\n\r\nHello Lead,\r\n"
        )
    else:
        returned_part = (
            "Content-Type: text/rfc822-headers\r\n\r\n"
            f"From: sales@example.com\r\nTo: lead@example.org\r\nMessage-ID: {ORIGINAL_ID}\r\n"
            "Subject: Q3 offer\r\n"
        )
    return (
        "From: MAILER-DAEMON@mx.example.org (Mail Delivery System)\r\n"
        "To: sales@example.com\r\n"
        f"Subject: {subject}\r\n"
        "Date: Tue, 16 Jul 2024 08:00:00 +0000\r\n"
        "Message-ID: <bounce-1@mx.example.org>\r\n"
        "MIME-Version: 1.0\r\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n'
        "--B\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n"
        f"{notice}\r\n\r\n"
        "--B\r\nContent-Type: message/delivery-status\r\n\r\n"
        "Reporting-MTA: dns; mx.example.org\r\n\r\n"
        "Final-Recipient: rfc822; lead@example.org\r\n"
        f"Action: {action}\r\nStatus: {status}\r\n"
        f"Diagnostic-Code: smtp; {diagnostic}\r\n\r\n"
        f"--B\r\n{returned_part}\r\n--B--\r\n"
    ).encode()


def test_user_unknown_is_hard_with_recipient_and_original_id(run):
    result = run(dsn("5.1.1", "550 5.1.1 <lead@example.org>: Recipient address rejected: User unknown"))
    assert result.kind is ReplyKind.BOUNCE_HARD
    assert result.bounce is not None
    assert result.bounce.reason == "userunknown"
    assert result.bounce.recipient == "lead@example.org"
    assert result.bounce.status == "5.1.1"
    assert result.bounce.original_message_id == ORIGINAL_ID
    assert "dsn:rfc3464" in result.evidence


def test_original_id_from_text_rfc822_headers(run):
    result = run(dsn("5.1.1", "550 no such user", returned="headers"))
    assert result.bounce.original_message_id == ORIGINAL_ID


def test_mailbox_full_sent_as_5_2_2_is_soft(run):
    result = run(dsn("5.2.2", "552 5.2.2 Mailbox full: user is over quota"))
    assert result.kind is ReplyKind.BOUNCE_SOFT
    assert result.bounce.reason == "mailboxfull"


def test_status_code_misleads_diagnostic_text_wins(run):
    result = run(dsn("5.1.1", "552 message size exceeds fixed maximum message size"))
    assert result.kind is ReplyKind.BOUNCE_SOFT
    assert result.bounce.reason == "mesgtoobig"


def test_action_delayed_is_soft_even_with_user_wording(run):
    result = run(dsn("4.4.1", "Connection timed out; user unknown?", action="delayed",
                     notice="This is a warning only: delivery is delayed, we will keep trying."))  # fmt: skip
    assert result.kind is ReplyKind.BOUNCE_SOFT
    assert result.bounce.action == "delayed"


def test_spam_block_is_soft(run):
    result = run(dsn("5.7.1", "554 5.7.1 Message rejected as spam by content filter"))
    assert result.kind is ReplyKind.BOUNCE_SOFT
    assert result.bounce.reason == "spamdetected"


def test_unknown_domain_is_hard(run):
    result = run(dsn("5.4.4", "Host or domain name not found. Name service error"))
    assert result.kind is ReplyKind.BOUNCE_HARD
    assert result.bounce.reason == "hostunknown"


def test_ndr_with_auto_submitted_is_a_bounce_not_an_auto_reply(mail, run):
    raw = mail(
        "This message was created automatically by mail delivery software.\n\n"
        "A message that you sent could not be delivered to one or more of its\n"
        "recipients. This is a permanent error. The following address(es) failed:\n\n"
        "  lead@example.org\n    Unrouteable address\n\n"
        "------ This is a copy of the message, including all the headers. ------\n\n"
        f"Message-ID: {ORIGINAL_ID}\nSubject: Q3 offer\n\nWe are not spam.\n",
        subject="Mail delivery failed: returning message to sender",
        sender="Mail Delivery System <Mailer-Daemon@mx.example.org>",
        headers={"Auto-Submitted": "auto-replied", "X-Failed-Recipients": "lead@example.org"},
    )
    result = run(raw)
    assert result.kind is ReplyKind.BOUNCE_HARD
    assert result.bounce.recipient == "lead@example.org"
    assert result.bounce.original_message_id == ORIGINAL_ID
    # Exim's "Unrouteable address" is a domain that does not route: sisimai's hostunknown (and
    # the returned copy's "spam" is not read).
    assert result.bounce.reason == "hostunknown"


def test_exim_retry_warning_is_soft(mail, run):
    raw = mail(
        "This message was created automatically by mail delivery software.\n"
        "A message that you sent has not yet been delivered to one or more of its\n"
        "recipients after more than 24 hours on the queue.\n\nlead@example.org\n"
        "No action is required on your part. Delivery attempts will continue.\n",
        subject="Warning: message 1abc delayed 24 hours",
        sender="Mail Delivery System <Mailer-Daemon@mx.example.org>",
    )
    assert run(raw).kind is ReplyKind.BOUNCE_SOFT


@pytest.mark.parametrize(
    "subject",
    ["Re: Your proposal was rejected by our board", "Re: Delivery failed on Tuesday?"],
)
def test_person_writing_about_rejection_is_not_a_bounce(mail, run, subject):
    raw = mail("Unfortunately the delivery failed and the offer was rejected. Call me?", subject=subject)
    assert run(raw).kind is ReplyKind.HUMAN_REPLY


def test_person_forwarding_a_bounce_is_human(run):
    inner = dsn("5.1.1", "550 5.1.1 User unknown").decode()
    raw = (
        "From: Jana Schmidt <jana@example.de>\r\nTo: sales@example.com\r\n"
        "Subject: Fwd: Undelivered Mail Returned to Sender\r\n"
        "Date: Tue, 16 Jul 2024 09:00:00 +0200\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/mixed; boundary="F"\r\n\r\n'
        "--F\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
        "My old address bounced, please write to jana@new.example.de from now on.\r\n\r\n"
        f"--F\r\nContent-Type: message/rfc822\r\n\r\n{inner}\r\n--F--\r\n"
    ).encode()
    result = run(raw)
    assert result.kind is ReplyKind.HUMAN_REPLY
    assert result.bounce is None


def test_delivered_action_is_not_a_bounce(run):
    raw = dsn(
        "2.0.0",
        "250 2.0.0 OK",
        action="delivered",
        subject="Delivery Status Notification (Success)",
        notice="Your message was delivered to the following recipient.",
    )
    assert run(raw).kind not in {ReplyKind.BOUNCE_HARD, ReplyKind.BOUNCE_SOFT}


def test_failed_address_is_read_from_a_qmail_notice(mail, run):
    body = (
        "Hi. This is the qmail-send program at mx.example.net.\n"
        "I'm afraid I wasn't able to deliver your message to the following addresses.\n"
        "This is a permanent error; I've given up. Sorry it didn't work out.\n\n"
        "<lead@example.net>:\nSorry, no mailbox here by that name. (#5.1.1)\n\n"
        "--- Below this line is a copy of the message.\n\nSubject: Q3 offer\n"
    )
    result = run(mail(body, subject="failure notice", sender="MAILER-DAEMON@mx.example.net"))
    assert result.kind is ReplyKind.BOUNCE_HARD
    assert result.bounce.recipient == "lead@example.net"
    assert "mta:qmail" in result.evidence
