# ruff: noqa: E501  (bounce texts are quoted as the servers write them, one line per line)
"""One bounce per MTA family, written here from each format's documentation (never copied from
the corpus): which reader recognises it, the failed recipient, the reason and hard or soft."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from replyguard.domain.inbound import classify
from replyguard.domain.states import ReplyKind

RCPT = "lead@dest.example"
ORIGINAL = (
    "From: Max Weber <max@sales.example>\r\nTo: lead@dest.example\r\nSubject: Q3 offer\r\n"
    "Message-ID: <rg.00112233445566778899aabbccddeeff@sales.example>\r\n\r\nHello Lead,\r\n"
)


def _head(headers: dict[str, str]) -> str:
    base = {"From": "Mail Delivery System <MAILER-DAEMON@mx.sales.example>", "To": "max@sales.example",
            "Subject": "Undelivered Mail Returned to Sender", "Date": "Mon, 15 Jul 2024 10:00:00 +0200",
            "Message-ID": "<ndr-1@mx.sales.example>", "MIME-Version": "1.0"}  # fmt: skip
    base.update(headers)
    return "".join(f"{k}: {v}\r\n" for k, v in base.items())


def plain(body: str, **headers: str) -> bytes:
    head = _head({**headers, "Content-Type": headers.get("Content-Type", "text/plain; charset=us-ascii")})
    return (head + "\r\n" + body.replace("\n", "\r\n")).encode()


def report(text: str, dsn: str | None, **headers: str) -> bytes:
    """A multipart/report: the human-readable text, the DSN fields, the returned message."""
    head = _head({**headers, "Content-Type": 'multipart/report; report-type=delivery-status; boundary="B"'})
    parts = [
        f"--B\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n{text.replace(chr(10), chr(13) + chr(10))}\r\n"
    ]
    if dsn is not None:
        fields = "Reporting-MTA: dns; mx.sales.example\r\n\r\n" + dsn.replace("\n", "\r\n")
        parts.append(f"--B\r\nContent-Type: message/delivery-status\r\n\r\n{fields}\r\n")
    parts.append(f"--B\r\nContent-Type: message/rfc822\r\n\r\n{ORIGINAL}\r\n--B--\r\n")
    return (head + "\r\n" + "".join(parts)).encode()


def dsn(
    status: str, diagnostic: str = "", recipient: str = RCPT, action: str = "failed", extra: str = ""
) -> str:
    fields = f"Final-Recipient: rfc822; {recipient}\nAction: {action}\nStatus: {status}\n"
    return fields + (f"Diagnostic-Code: smtp; {diagnostic}\n" if diagnostic else "") + extra


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes
    agent: str
    reason: str
    kind: ReplyKind
    recipient: str = RCPT


HARD, SOFT = ReplyKind.BOUNCE_HARD, ReplyKind.BOUNCE_SOFT
POSTFIX_TEXT = "This is the mail system at host mx.sales.example.\n\nI'm sorry to have to inform you ...\n\n"
EXIM_INTRO = (
    "This message was created automatically by mail delivery software.\n\nA message that you sent could "
    "not be delivered to one or more of its\nrecipients. This is a permanent error. The following "
    "address(es) failed:\n\n"
)
QMAIL_INTRO = (
    "Hi. This is the qmail-send program at mx.sales.example.\nI'm afraid I wasn't able to deliver ...\n\n"
)
COPY = "\n------ This is a copy of the message, including all the headers. ------\n" + ORIGINAL.replace(
    "\r\n", "\n"
)

CASES = [
    Case(
        "postfix user unknown at RCPT",
        report(
            POSTFIX_TEXT
            + f"<{RCPT}>: host mx.dest.example[192.0.2.7] said: 550 5.1.1\n    <{RCPT}>: Recipient "
            "address rejected: User unknown in local recipient\n    table (in reply to RCPT TO command)\n",
            dsn("5.1.1", f"550 5.1.1 <{RCPT}>: Recipient address rejected: User unknown"),
        ),
        "postfix",
        "userunknown",
        HARD,
    ),
    Case(
        "postfix rate limit at MAIL FROM",
        report(
            POSTFIX_TEXT
            + f"<{RCPT}>: host mx.dest.example[192.0.2.7] said: 452 4.3.2 Connection rate limit\n"
            "    exceeded. (in reply to MAIL FROM command)\n",
            dsn("4.3.2", "452 4.3.2 Connection rate limit exceeded."),
        ),
        "postfix",
        "toomanyconn",
        SOFT,
    ),
    Case(
        "sendmail spam at DATA",
        report(
            "   ----- Transcript of session follows -----\n... while talking to mx.dest.example.:\n>>> DATA\n"
            "<<< 550 5.7.1 Message rejected as spam\n554 5.0.0 Service unavailable\n",
            dsn("5.0.0", "550 5.7.1 Message rejected as spam"),
            Subject="Returned mail: see transcript for details",
        ),
        "sendmail",
        "spamdetected",
        SOFT,
    ),
    Case(
        "sendmail greeting refused",
        report(
            "   ----- Transcript of session follows -----\n... while talking to mx.dest.example.:\n"
            "<<< 554 mx.dest.example ESMTP not accepting messages\n554 5.0.0 Service unavailable\n",
            dsn("5.0.0", "554 mx.dest.example ESMTP not accepting messages"),
            Subject="Returned mail: see transcript for details",
        ),
        "sendmail",
        "blocked",
        SOFT,
    ),
    Case(
        "exim user unknown at RCPT",
        plain(
            EXIM_INTRO
            + f"  {RCPT}\n    host mx.dest.example [192.0.2.7]\n    SMTP error from remote mail server "
            f"after RCPT TO:<{RCPT}>:\n    550 5.1.1 <{RCPT}>: Recipient address rejected: User unknown\n"
            + COPY,
            Subject="Mail delivery failed: returning message to sender",
        ),
        "exim",
        "userunknown",
        HARD,
    ),
    Case(
        "exim retry timeout",
        plain(
            EXIM_INTRO + f"  {RCPT}\n    retry timeout exceeded\n" + COPY,
            Subject="Mail delivery failed: returning message to sender",
        ),
        "exim",
        "expired",
        SOFT,
    ),
    Case(
        "exim unroutable domain",
        plain(
            EXIM_INTRO + f"  {RCPT}\n    all relevant MX records point to non-existent hosts\n" + COPY,
            Subject="Mail delivery failed: returning message to sender",
        ),
        "exim",
        "hostunknown",
        HARD,
    ),
    Case(
        "qmail user unknown",
        plain(
            QMAIL_INTRO
            + f"<{RCPT}>:\n192.0.2.7 does not like recipient.\nRemote host said: 550 5.1.1 <{RCPT}>... "
            "User Unknown\nGiving up on 192.0.2.7.\n\n--- Below this line is a copy of the message.\n\n"
            + ORIGINAL,
            Subject="failure notice",
        ),
        "qmail",
        "userunknown",
        HARD,
    ),
    Case(
        "qmail no such domain",
        plain(
            QMAIL_INTRO + f"<{RCPT}>:\nSorry, I couldn't find any host named dest.example. (#5.1.2)\n\n"
            "--- Below this line is a copy of the message.\n\n" + ORIGINAL,
            Subject="failure notice",
        ),
        "qmail",
        "hostunknown",
        HARD,
    ),
    Case(
        "qmail sender domain refused at MAIL FROM",
        plain(
            QMAIL_INTRO
            + f"<{RCPT}>:\nConnected to 192.0.2.7 but sender was rejected.\nRemote host said: 553 sorry, "
            "your envelope sender domain must exist (#5.7.1)\n\n--- Below this line is a copy of the message.\n\n"
            + ORIGINAL,
            Subject="failure notice",
        ),
        "qmail",
        "rejected",
        SOFT,
    ),
    Case(
        "office 365 recipient not found",
        report(
            f"Delivery has failed to these recipients or groups:\n\n{RCPT}<mailto:{RCPT}>\nThe email address you "
            "entered couldn't be found.\n\nDiagnostic information for administrators:\n\nGenerating server: "
            f"AM0PR01MB0001.eurprd01.prod.outlook.com\n\n{RCPT}\nRemote Server returned '550 5.1.10 "
            "RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup'\n\nOriginal message headers:\n",
            dsn("5.1.10", "smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound"),
            Subject="Undeliverable: Q3 offer",
            **{"X-MS-Exchange-Message-Is-Ndr": "1", "X-MS-Exchange-CrossTenant-FromEntityHeader": "Hosted"},
        ),
        "office365",
        "userunknown",
        HARD,
    ),
    Case(
        "exchange 2003 unknown recipient",
        plain(
            "Your message\n\n  To:      lead@dest.example\n  Subject: Q3 offer\n  Sent:    Mon, 15 Jul 2024 10:00:00 "
            f"+0200\n\ndid not reach the following recipient(s):\n\n{RCPT} on Mon, 15 Jul 2024 10:01:00 +0200\n"
            "    The recipient name is not recognized\n    MSEXCH:IMS:SALES:EXAMPLE:MX1 0 (000C05A6) Unknown Recipient\n",
            Subject="Undeliverable: Q3 offer",
            **{"X-Mailer": "Internet Mail Service (5.5.2653.19)"},
        ),
        "exchange2003",
        "userunknown",
        HARD,
    ),
    Case(
        "gmail old notice, mailbox full at RCPT",
        plain(
            "This is an automatically generated Delivery Status Notification\n\nDelivery to the following recipient "
            f"failed permanently:\n\n     {RCPT}\n\nTechnical details of permanent failure:\nGoogle tried to deliver "
            "your message, but it was rejected by the recipient domain. The error that the other server returned "
            f"was:\n550 550 5.2.2 <{RCPT}>... Mailbox Full (state 14).\n\n----- Original message -----\n",
            From="Mail Delivery Subsystem <mailer-daemon@googlemail.com>",
            Subject="Delivery Status Notification (Failure)",
        ),
        "gmail",
        "mailboxfull",
        SOFT,
    ),
    Case(
        "google groups refusal",
        plain(
            "Hello max@sales.example,\n\nWe're writing to let you know that the group you tried to contact (sales) "
            "may not exist, or you may not have permission to post messages to the group. A few more details on why "
            "you weren't able to post:\n\n * You might have spelled or formatted the group name incorrectly.\n"
            " * The owner of the group may have removed this group.\n * You may need to join the group before "
            "receiving permission to post.\n * This group may not be open to posting.\n\nThanks,\n\nGoogle Groups\n",
            From="Mail Delivery Subsystem <mailer-daemon@googlemail.com>",
            Subject="Delivery Status Notification (Failure)",
            **{"X-Failed-Recipients": "sales@googlegroups.example", "X-Google-Smtp-Source": "AGHT+abc"},
        ),
        "googlegroups",
        "rejected",
        SOFT,
        "sales@googlegroups.example",
    ),
    Case(
        "domino not in directory",
        plain(
            f"Your message\n\n  Subject: Q3 offer\n\nwas not delivered to:\n\n  {RCPT}\n\nbecause:\n\n  User lead "
            f"({RCPT}) not listed in Domino Directory\n",
            Subject="DELIVERY FAILURE: User lead not listed",
        ),
        "domino",
        "userunknown",
        HARD,
    ),
    Case(
        "notes not in address book",
        plain(
            f"------- Failure Reasons  --------\n\nUser not listed in public Name & Address Book\n{RCPT}\n\n"
            "------- Returned Message --------\n",
            Subject="Undeliverable message",
        ),
        "notes",
        "userunknown",
        HARD,
    ),
    Case(
        "au (EZweb) disabled account",
        plain(
            "The user(s) account is disabled.\n\n<lead@ezweb.ne.jp>: 550 user unknown (in reply to RCPT TO command)\n",
            From="Postmaster@ezweb.ne.jp",
            Subject="Mail System Error - Returned Mail",
            **{"Message-ID": "<20240715100000.A0001@lsean.ezweb.ne.jp>"},
        ),
        "ezweb",
        "suspend",
        HARD,
        "lead@ezweb.ne.jp",
    ),
    Case(
        "verizon no such user",
        plain(
            "Error: 550 - Requested action not taken: no such user here\n\nMessage details:\n  Subject: Q3 offer\n"
            "  MAIL FROM: max@sales.example\n  RCPT TO: 5551234567@vtext.com\n",
            From="post_master@vtext.com",
            Subject="Undeliverable Message",
        ),
        "verizon",
        "userunknown",
        HARD,
        "5551234567@vtext.com",
    ),
    Case(
        "imail unknown user",
        plain(
            f"Unknown user: {RCPT}\n\nOriginal message follows.\n\n" + ORIGINAL,
            Subject="Undeliverable Mail",
            **{"X-Mailer": "<SMTP32 v8.22>"},
        ),
        "imail",
        "userunknown",
        HARD,
    ),
    Case(
        "messaging server user unknown",
        report(
            "This report relates to a message you sent with the following header fields:\n\n  Message-id: <a@b>\n\n"
            f"Your message cannot be delivered to the following recipients:\n\n  Recipient address: {RCPT}\n"
            f"  Reason: Remote SMTP server has rejected address\n  Diagnostic code: smtp;550 5.1.1 <{RCPT}>... User "
            "Unknown\n  Remote system: dns;mx.dest.example (TCP|192.0.2.1|1234|192.0.2.7|25)\n",
            dsn("5.1.1", f"550 5.1.1 <{RCPT}>... User Unknown"),
            Subject="Delivery Notification: Delivery has failed",
        ),
        "messagingserver",
        "userunknown",
        HARD,
    ),
    Case(
        "opensmtpd mailbox full",
        plain(
            "    Hi!\n\n    This is the MAILER-DAEMON, please DO NOT REPLY to this e-mail.\n\n    An error has "
            "occurred while attempting to deliver a message for\n    the following list of recipients:\n\n"
            f"{RCPT}: 550 5.2.2 <{RCPT}>... Mailbox Full\n\n    Below is a copy of the original message:\n\n"
            + ORIGINAL,
            From="Mailer Daemon <MAILER-DAEMON@mx.sales.example>",
            Subject="Delivery status notification: error",
        ),
        "opensmtpd",
        "mailboxfull",
        SOFT,
    ),
    Case(
        "courier user unknown at RCPT",
        report(
            "This is a delivery status notification from mx.sales.example,\nrunning the Courier mail server.\n\n"
            "                          UNDELIVERABLE MAIL\n\nYour message to the following recipients cannot be "
            f"delivered:\n\n<{RCPT}>:\n    mx.dest.example [192.0.2.7]:\n>>> RCPT TO:<{RCPT}>\n<<< 550 5.1.1 "
            f"<{RCPT}>... User Unknown\n",
            dsn("5.0.0", f"550 5.1.1 <{RCPT}>... User Unknown"),
            Subject="NOTICE: mail delivery status.",
        ),
        "courier",
        "userunknown",
        HARD,
    ),
    Case(
        "dragonfly mailbox full",
        plain(
            "This is the DragonFly Mail Agent v0.13 at mx.sales.example.\n\nThere was an error delivering your mail "
            f"to <{RCPT}>.\n\nmx.dest.example [192.0.2.7] did not like our RCPT TO:\n552 5.2.2 <{RCPT}>: Recipient "
            "address rejected: Mailbox full\n\nOriginal message follows.\n\n" + ORIGINAL,
            From="MAILER-DAEMON <>",
            Subject="Mail delivery failed",
            Received="from MAILER-DAEMON id e070f by mx.sales.example (DragonFly Mail Agent v0.13); Mon, 15 Jul 2024",
        ),
        "dragonfly",
        "mailboxfull",
        SOFT,
    ),
    Case(
        "gmx user unknown at RCPT",
        plain(
            "This message was created automatically by mail delivery software.\n\nA message that you sent could not "
            f'be delivered to one or more of\nits recipients. This is a permanent error.\n\n"{RCPT}":\nSMTP error '
            f"from remote server after RCPT command:\nhost: mx.dest.example\n5.1.1 <{RCPT}>... User Unknown\n\n"
            "--- The header of the original message is following. ---\n\n" + ORIGINAL,
            From="MAILER-DAEMON@mail.gmx.example",
            Subject="Mail delivery failed: returning message to sender",
            **{"X-GMX-Antispam": "0 (Mail was not recognized as spam)"},
        ),
        "gmx",
        "userunknown",
        HARD,
    ),
    Case(
        "zoho invalid address",
        plain(
            "This message was created automatically by mail delivery software.\nA message that you sent could not be "
            f"delivered to one or more of its recipients. This is a permanent error.\n\n{RCPT} Invalid Address, "
            f"ERROR_CODE :550, ERROR_CODE :5.1.1 <{RCPT}>... User Unknown\n",
            Subject="Undelivered Mail Returned to Sender",
            **{"X-ZohoMail": "Si CHF_MF_NL SS_10"},
        ),
        "zoho",
        "userunknown",
        HARD,
    ),
    Case(
        "amazon ses receiving rule template",
        report(
            "This message could not be delivered.\n",
            dsn("5.1.1", "550 5.1.1 Mailbox does not exist"),
            Subject="Delivery Status Notification (Failure)",
            **{"X-SES-Outgoing": "2024.07.15-54.240.0.1"},
        ),
        "ses-receiving",
        "filtered",
        SOFT,
    ),
    Case(
        "yahoo user unknown at RCPT",
        plain(
            f"Sorry, we were unable to deliver your message to the following address.\n\n<{RCPT}>:\nRemote host "
            f"said: 550 5.1.1 <{RCPT}>... User Unknown [RCPT_TO]\n\n--- Below this line is a copy of the message.\n\n"
            + ORIGINAL,
            Subject="Failure Notice",
            **{"X-YMailISG": "abc"},
        ),
        "yahoo",
        "userunknown",
        HARD,
    ),
    Case(
        "outlook.com mailbox unavailable",
        report(
            "Delivery to the following recipients failed.\n",
            dsn("5.5.0", "550 Requested action not taken: mailbox unavailable"),
            Subject="Delivery Status Notification (Failure)",
            **{"X-Message-Delivery": "Vj0xLjE7", "X-Message-Info": "x"},
        ),
        "outlook.com",
        "userunknown",
        HARD,
    ),
    Case(
        "sendmail 5 user unknown",
        plain(
            "   ----- Transcript of session follows -----\nWhile talking to mx.dest.example:\n"
            f">>> RCPT To:<{RCPT}>\n<<< 550 <{RCPT}>... User unknown\n550 <{RCPT}>... User unknown\n\n"
            "   ----- Unsent message follows -----\n" + ORIGINAL,
            Subject="Returned mail: User unknown",
        ),
        "sendmail5",
        "userunknown",
        HARD,
    ),
    Case(
        "mcafee appliance user unknown",
        report(
            f"    --- The following addresses had delivery problems ---\n\n<{RCPT}>   (User unknown {RCPT})\n",
            f"Original-Recipient: <{RCPT}>\nAction: failed\nDiagnostic-Code: smtp; 550 No such user\n",
            Subject="Delivery Status",
            **{"X-NAI-Header": "Modified by McAfee Email Gateway"},
        ),
        "mcafee",
        "userunknown",
        HARD,
    ),
    Case(
        "fml: not a member of the list",
        plain(
            "You are not a member of this mailing list <sales@lists.dest.example>.\n\nIf you know the general "
            "guide of this list, please send mail with the mail body\n\tguide\nto the address\n\tsales-ctl@lists.dest.example\n",
            From="sales-admin@lists.dest.example",
            Subject="You max@sales.example are not member (sales ML)",
            **{
                "X-MLServer": "fml [fml 4.0.3 release]",
                "Message-ID": "<202407151000.FML12345@lists.dest.example>",
            },
        ),
        "fml",
        "rejected",
        SOFT,
        "sales@lists.dest.example",
    ),
    Case(
        "generic DSN: the answer is only in the text",
        report(
            f"Delivery to the following recipient failed:\n\n{RCPT}\n\nThe remote server said: 552 5.2.2 mailbox full\n",
            dsn("5.0.0"),
            From="postmaster@mx.sales.example",
            Subject="Delivery Status Notification (Failure)",
        ),
        "rfc3464",
        "mailboxfull",
        SOFT,
    ),
    Case(
        "generic DSN: PowerMTA's bounce category",
        report(
            "Hello, this is the mail server on mx.sales.example.\n",
            dsn("5.0.0", "554 delivery error", extra="X-PowerMTA-BounceCategory: bad-mailbox\n"),
            Subject="Delivery report",
        ),
        "rfc3464",
        "userunknown",
        HARD,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reader(case: Case):
    result = classify(case.raw)
    assert result.kind is case.kind, result.evidence
    assert result.bounce is not None
    assert f"mta:{case.agent}" in result.evidence
    assert result.bounce.reason == case.reason, result.evidence
    assert result.bounce.recipient == case.recipient


def test_every_reader_has_a_case():
    from replyguard.domain.inbound.mta import READERS

    covered = {case.agent for case in CASES}
    missing = {name for name, _ in READERS} - covered - {"unnamed-x3"}
    assert missing == set()
