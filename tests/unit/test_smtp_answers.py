"""The classification of SMTP refusals, as a table: whose problem each answer is."""

from __future__ import annotations

import pytest

from replyguard.domain.smtp_answers import Blame, Stage, Verdict, classify, enhanced_code

S, M, R, D, E = Stage.SESSION, Stage.MAIL, Stage.RCPT, Stage.DATA, Stage.END
ADDR, FULL, US, NONE = Blame.ADDRESS, Blame.MAILBOX_FULL, Blame.SENDER, Blame.NONE

TABLE = [
    # -- the recipient does not exist: hard bounce
    (R, 550, "5.1.1 User unknown", False, ADDR),
    (R, 550, "5.1.1 <bob@example.org>: Recipient address rejected: User unknown", False, ADDR),
    (R, 550, "No such user here", False, ADDR),
    (R, 550, "Requested action not taken: mailbox unavailable (user does not exist)", False, ADDR),
    (R, 551, "User not local; please try <x@y>", False, ADDR),
    (R, 553, "mailbox name not allowed", False, ADDR),
    (R, 550, "5.1.2 Host unknown, domain not found", False, ADDR),
    (R, 550, "5.1.10 Recipient address has null MX", False, ADDR),
    (R, 550, "5.2.1 The email account that you tried to reach is disabled", False, ADDR),
    (E, 550, "5.1.1 Delivery to this recipient failed: no such user", False, ADDR),
    (E, 550, "Unrouteable address", False, ADDR),
    # -- the mailbox is full: soft bounce
    (R, 452, "4.2.2 Mailbox full", True, FULL),
    (R, 452, "Insufficient system storage", True, FULL),
    (R, 552, "5.2.2 Mailbox full", True, FULL),
    (E, 552, "5.2.2 The email account that you tried to reach is over quota", True, FULL),
    (E, 552, "Requested mail action aborted: exceeded storage allocation", True, FULL),
    (E, 452, "4.2.2 Over quota", True, FULL),
    (R, 550, "Mailbox is full", True, FULL),
    # -- our mailbox: credentials, sender, relaying, reputation
    (S, 535, "5.7.8 Authentication credentials invalid", True, US),
    (S, 554, "No SMTP service here", True, US),
    (S, 530, "5.7.0 Must issue a STARTTLS command first", True, US),
    (M, 530, "5.7.0 Authentication required", True, US),
    (M, 550, "5.7.1 Sender address rejected: not owned by user", True, US),
    (M, 553, "5.1.8 Domain of sender address does not exist", True, US),
    (M, 550, "Sender denied", True, US),
    (R, 554, "5.7.1 <bob@example.org>: Relay access denied", True, US),
    (R, 550, "Relaying denied", True, US),
    (E, 550, "5.7.26 Unauthenticated email from seller.test is not accepted due to DMARC policy", True, US),
    (E, 550, "5.7.1 Service unavailable; client host blocked using Spamhaus", True, US),
    (E, 554, "5.7.1 Message rejected: sending IP has a poor reputation", True, US),
    (D, 550, "5.7.23 SPF validation failed", True, US),
    # -- temporary, nobody to blame: retry as before
    (S, 421, "4.3.2 Service not available, closing channel", True, NONE),
    (S, 454, "4.7.0 Temporary authentication failure", True, NONE),
    (M, 451, "4.7.1 Greylisted, try again later", True, NONE),
    (R, 451, "4.3.0 Try again later", True, NONE),
    (R, 450, "4.2.1 Mailbox busy", True, NONE),
    (R, 452, "4.5.3 Too many recipients", True, NONE),
    (D, 451, "4.3.0 Not now", True, NONE),
    (E, 451, "4.3.0 Queue full, try later", True, NONE),
    (E, 421, "4.7.0 Too many messages, slow down", True, NONE),
    # -- permanent, about this message or unclear: the step fails and a person decides
    (M, 552, "5.3.4 Message size exceeds fixed limit", False, NONE),
    (M, 555, "5.5.4 Unsupported option: SMTPUTF8", False, NONE),
    (E, 552, "5.3.4 Message too big", False, NONE),
    (E, 550, "5.7.1 Content rejected", False, NONE),
    (D, 554, "5.7.1 Not from you", False, NONE),
    (R, 550, "5.7.1 Recipient address rejected: Access denied", False, NONE),
    (R, 550, "Mailbox unavailable", False, NONE),
    (E, 554, "Transaction failed", False, NONE),
]


@pytest.mark.parametrize(("stage", "code", "text", "temporary", "blame"), TABLE)
def test_classification_table(stage: Stage, code: int, text: str, temporary: bool, blame: Blame) -> None:
    assert classify(stage, code, text) == Verdict(temporary, blame)


def test_enhanced_codes_are_read_only_at_the_start() -> None:
    assert enhanced_code("5.1.1 User unknown") == (5, 1, 1)
    assert enhanced_code("  4.2.2 full") == (4, 2, 2)
    assert enhanced_code("User unknown 5.1.1") is None
    assert enhanced_code("5.1 User") is None
