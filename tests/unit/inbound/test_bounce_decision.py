"""Bounce codes, wordings and the reason order, table by table (no messages: the facts alone)."""

from __future__ import annotations

import re

import pytest

from replyguard.domain.inbound.bounce_codes import find_reply, find_status, prefer, status_name
from replyguard.domain.inbound.bounce_hosts import reason_from_host
from replyguard.domain.inbound.bounce_reasons import WORDING_ONLY, Facts, reason_for
from replyguard.domain.inbound.bounce_wording import WORDING, Aligned, Words, says

# --- status and reply codes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("550 5.1.1 <lead@example.org>... User unknown", "5.1.1"),
        ("host [198.5.1.1] said: 550 no such user", None),  # an IP address is not a status
        ("connect to 5.1.1.9 failed", None),  # nor the start of one
        ("version 5.2.0 of the filter; 550 5.7.1 denied", "5.7.1"),
        ("550 5.0.0 rejected 5.2.2 mailbox full", "5.2.2"),  # a generic x.0.0 only as a last resort
        ("451 4.4.7 delivery time expired", "4.4.7"),
        ("v5.1.1 of the software", None),
        ("550 #5.1.1 bad address", "5.1.1"),
    ],
)
def test_status_found_in_prose(text, expected):
    assert find_status(text) == expected


@pytest.mark.parametrize(
    ("text", "hint", "expected"),
    [
        ("554 5.7.1 then 550 5.1.1", "", "550"),  # by severity list, not by position
        ("421 4.7.0 try later", "4", "421"),
        ("the date 2024/550/1", "", None),
        ("no code here", "", None),
        ("X-Unix; 550", "", None),
    ],
)
def test_reply_code_found(text, hint, expected):
    assert find_reply(text, hint) == expected


@pytest.mark.parametrize(
    ("dsn", "found", "reply", "expected"),
    [
        ("5.0.0", "5.1.1", "550", "5.1.1"),  # the DSN's is generic
        ("5.1.1", "5.2.2", "", "5.2.2"),  # 5.1.1 gives way to a code that says more
        ("5.1.1", "5.1.0", "", "5.1.1"),
        ("4.4.7", "4.2.2", "", "4.2.2"),  # 4.4.7 is ambiguous
        ("5.7.1", "5.7.26", "", "5.7.1"),
        ("4.0.0", "5.1.1", "550", "5.1.1"),  # the reply code's class decides
        (None, "5.1.1", "", "5.1.1"),
        ("5.2.1", None, "", "5.2.1"),
    ],
)
def test_prefer(dsn, found, reply, expected):
    assert prefer(dsn, found, reply) == expected


def test_status_names():
    assert status_name("5.1.1") == "userunknown"
    assert status_name("5.7.13") == "suspend"
    assert status_name("5.7.3") == "securityerror"
    assert status_name("2.0.0") == "delivered"
    assert status_name("5.9.9") == ""


# --- wordings ---------------------------------------------------------------------------------

_META = re.compile(r"(?<!\\)[.^$*+?{}\[\]()|]|\\[a-zA-Z]")


def _literal(source: str) -> str | None:
    """The text a literal wording matches, or None when it is a pattern."""
    if _META.search(source) or "\x00" in source:
        return None
    return re.sub(r"\\(.)", r"\1", source)


def test_every_literal_wording_is_found_through_the_index():
    """The first-word index must never hide a wording: each literal one, alone in a sentence."""
    checked = 0
    for reason, family in WORDING.items():
        for source in family.sources:
            literal = _literal(source)
            if literal is None:
                continue
            text = f"550 rejected: {literal.strip()} (see below)"
            assert family.search(text, Words(text).tokens) is not None, (reason, source)
            checked += 1
    assert checked > 400


def test_aligned_fragments_in_order_and_close():
    aligned = Aligned("mailbox \x00full")
    assert aligned.search("your mailbox is now full") == "mailbox is now full"
    assert aligned.search("full mailbox") is None
    assert aligned.search("mailbox " + "x" * 200 + " full") is None  # too far apart


def test_hostile_text_is_read_in_linear_time():
    # Would take seconds with two regex gaps in a row; each Aligned is one pass per fragment.
    for text in ("(@" * 3000, "said: 550 5.1.1 " * 400, "mailbox " * 750):
        assert reason_for(Facts(status="5.0.0", diagnostic=text))[0] == "onhold"


def test_exception_wording_is_not_its_family():
    assert says("rejected", "550 sender address rejected") is not None
    assert says("rejected", "550 recipient address rejected: unknown") is None


def test_words_asks_each_family_once():
    words = Words("552 mailbox full")
    assert words.says("mailboxfull") == "mailbox full"
    assert words.says("mailboxfull") == "mailbox full"
    assert words.says("userunknown") is None


# --- the reason order -------------------------------------------------------------------------


def _reason(**fields: str | None) -> str:
    diagnostic = (fields.pop("diagnostic", "") or "").lower()
    return reason_for(Facts(diagnostic=diagnostic, **fields))[0]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # A missing user: by status, or by words when RCPT TO was refused.
        ({"status": "5.1.1", "diagnostic": "550 5.1.1 user unknown"}, "userunknown"),
        ({"status": "5.0.0", "command": "RCPT", "diagnostic": "550 no such user"}, "userunknown"),
        # The same words after DATA come from a filter.
        ({"status": "5.0.0", "command": "DATA", "diagnostic": "550 unknown user"}, "filtered"),
        # A 5.1.1 whose words name another family belongs to that family.
        ({"status": "5.1.1", "diagnostic": "550 5.1.1 mailbox full"}, "mailboxfull"),
        ({"status": "5.1.1", "diagnostic": "550 5.1.1 relay access denied"}, "norelaying"),
        # The status of a family decides when its words are missing.
        ({"status": "5.2.2", "diagnostic": "552 sorry"}, "mailboxfull"),
        ({"status": "5.2.3", "diagnostic": "552 message length exceeds administrative limit"}, "exceedlimit"),
        ({"status": "5.3.4", "diagnostic": "552 too big"}, "mesgtoobig"),
        ({"status": "5.7.1", "diagnostic": "554 5.7.1 header error"}, "policyviolation"),
        (
            {"status": "5.7.1", "diagnostic": "550 5.7.1 can't determine purported responsible address"},
            "rejected",
        ),
        (
            {"status": "5.1.2", "diagnostic": "550 host unknown (name server: x: no data known)"},
            "hostunknown",
        ),
        ({"status": "5.1.2", "diagnostic": "550 host name lookup failure"}, "networkerror"),
        (
            {"status": "4.3.2", "command": "MAIL", "diagnostic": "452 4.3.2 connection rate limit exceeded"},
            "toomanyconn",
        ),
        # Sender-side problems.
        ({"status": "5.7.1", "diagnostic": "550 5.7.1 spf check: fail"}, "authfailure"),
        (
            {"status": "5.7.1", "diagnostic": "client host rejected: cannot find your reverse hostname"},
            "requireptr",
        ),
        # Refused before DATA, a filter's words do not make it a filter of the content.
        ({"status": "5.0.0", "command": "MAIL", "diagnostic": "550 user reject"}, "onhold"),
        ({"status": "5.0.0", "command": "DATA", "diagnostic": "550 user reject"}, "filtered"),
        # Fallbacks: the class, the reply code, the stage, the action.
        ({"status": "5.6.9", "diagnostic": "554 bad"}, "contenterror"),
        ({"reply_code": "503", "diagnostic": "503 bad sequence"}, "syntaxerror"),
        ({"command": "HELO", "diagnostic": "554 go elsewhere please"}, "blocked"),
        ({"action": "delayed", "diagnostic": "still trying"}, "expired"),
        ({"diagnostic": "something odd"}, "onhold"),
        ({}, "undefined"),
    ],
)
def test_reason_order(facts, expected):
    assert _reason(**facts) == expected


def test_missing_user_by_wording_alone_is_marked_as_policy():
    reason, why = reason_for(Facts(diagnostic="kijitora@example.org [user unknown]"))
    assert reason == "userunknown"
    assert why.startswith(WORDING_ONLY)
    # With a status that names another reason, no: the status speaks.
    assert _reason(status="5.2.1", diagnostic="user unknown") == "filtered"


def test_the_reporting_format_names_the_reason():
    assert _reason(hint="mailboxfull", diagnostic="whatever") == "mailboxfull"
    # A hint that needs a second look yields to a more specific family.
    assert _reason(hint="userunknown", status="5.2.2", diagnostic="mailbox full") == "mailboxfull"


def test_local_delivery_agent():
    assert _reason(spec="X-UNIX", diagnostic="procmail: couldn't create /var/mail/x") == "mailererror"
    assert _reason(diagnostic="maildrop: maildir over quota.") == "mailboxfull"


@pytest.mark.parametrize(
    ("domain", "rhost", "diagnostic", "expected"),
    [
        ("laposte.net", None, "550 5.5.0 invalid recipient. lpn007_416", "userunknown"),
        ("orange.fr", None, "550 boite du destinataire pleine. ofr_417", "mailboxfull"),
        (
            "example.com",
            "smtp.secureserver.net",
            "550 5.1.1 sent to too many recipients this hour. ib607",
            "speeding",
        ),
        ("cox.net", None, "550 5.1.0 sender rejected. aup#cxbl", "blocked"),
        ("charter.net", None, "550 5.1.0 sender rejected. aup#in-1310", "toomanyconn"),
        ("qq.com", None, "550 ip frequency limited", "toomanyconn"),
        (
            "example.com",
            "mta6.am0.yahoodns.net",
            "554 delivery error: dd this user doesn't have a yahoo.com account",
            "userunknown",
        ),
        ("ezweb.ne.jp", None, "550 : user unknown", "filtered"),
        ("ezweb.ne.jp", None, "550 <a@ezweb.ne.jp>: user unknown", "userunknown"),
        (
            "example.com",
            "us-smtp-1.mimecast.com",
            "554 email rejected due to security policies",
            "virusdetected",
        ),
        ("example.com", "mx.example.com", "550 lpn007_416", None),  # not Orange's host: no code table
    ],
)
def test_provider_codes(domain, rhost, diagnostic, expected):
    facts = Facts(reply_code=diagnostic[:3], diagnostic=diagnostic, domain=domain, rhost=rhost)
    assert reason_from_host(facts) == expected


@pytest.mark.parametrize(
    ("command", "status", "expected"),
    [("RCPT", "5.0.0", "userunknown"), ("DATA", "5.0.0", "rejected"), (None, "5.0.0", "filtered")],
)
def test_docomo_unknown_user_depends_on_the_stage(command, status, expected):
    facts = Facts(
        status=status, command=command, diagnostic="550 unknown user a@docomo.ne.jp", domain="docomo.ne.jp"
    )
    assert reason_from_host(facts) == expected
