"""Item 2 of issue 7: one message that cannot be written must block nothing behind it.

Each hostile message below broke the PostgreSQL write (a NUL in a text column, a lone
surrogate, an address longer than its column) and stayed `stored` forever. Now its text is
made storable before any write, with an evidence entry naming what changed; it takes its
effect; and a good message after it takes its effect too. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.domain.inbound.status import IllegalInboundMove, InboundStatus
from replyguard.service_layer.inbound.ingest import MAX_ATTEMPTS, NOBODY, ingest_raw, store_raw
from replyguard.service_layer.inbound.quarantine import SETTLE, Sweeper, retry, retry_stored
from replyguard.service_layer.inbound.views import list_inbound
from tests.adversarial import hostile
from tests.adversarial.cli import run_cli
from tests.adversarial.strategies import good_message
from tests.integration.test_http_inbound import PRIYA
from tests.integration.test_imap_poller import wait_for
from tests.support.scenario import REPORTS, lead_state

MARC = "marc.keller@brightline-logistics.test"

CASES: dict[str, Callable[[App], bytes]] = {
    "qp-00": hostile.qp_nul,
    "utf16-labelled-utf8": hostile.utf16_as_utf8,
    "base64-nul": hostile.base64_nul,
    "encoded-word-nul": hostile.encoded_word_nul,
    "nul-in-message-id": hostile.nul_in_message_id,
    "from-over-320": hostile.long_local_part,
    "domain-over-255": hostile.long_domain,
    "utf7-surrogate": hostile.utf7_surrogate,
    "escape-charset": hostile.escape_charset,
}


def test_messages_that_could_not_be_written_take_effect_and_block_nothing(sent: App) -> None:
    # One workspace for every case (a fresh one per case costs seconds on PostgreSQL): each
    # hostile reply answers Priya's thread and must be recorded, clean; the newsletter after
    # each must reach its final status.
    for n, (name, build) in enumerate(CASES.items()):
        result = ingest_raw(sent, build(sent), "test")
        assert result.status == "matched", (name, result)
        with sent.uow() as uow:
            reply = uow.session.scalars(
                select(m.Reply).where(m.Reply.inbound_message_id == result.inbound_id)
            ).one()
            stored = uow.session.get_one(m.InboundMessage, result.inbound_id)
            values = (
                reply.text or "",
                reply.subject or "",
                reply.from_address or "",
                stored.message_id or "",
            )
        for value in values:
            assert "\x00" not in value and not any("\ud800" <= ch <= "\udfff" for ch in value), name
            value.encode("utf-8")
        after = ingest_raw(sent, good_message(n), "test")
        assert after.status == "unmatched", (name, after)
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    good = ingest_raw(sent, hostile.good_reply(sent, MARC, REPORTS, "<good@brightline.test>"), "test")
    assert good.status == "matched"
    assert lead_state(sent, MARC, REPORTS) == "replied"


def test_the_real_bounce_shape_with_binary_text_is_recorded_with_evidence(sent: App) -> None:
    result = ingest_raw(sent, hostile.bounce_with_binary_text(sent), "test")
    assert (result.status, result.kind) == ("matched", "bounce_hard")
    assert any(e.startswith("storable:") for e in result.evidence), result.evidence
    with sent.uow() as uow:
        text, evidence = uow.session.execute(select(m.Reply.text, m.Reply.evidence)).one()
    assert "\x00" not in (text or "")
    assert any(e.startswith("storable:") for e in evidence)


def test_a_message_that_still_fails_is_tried_three_times_then_quarantined_and_shown(
    sent: App,
) -> None:
    attempts: list[str] = []

    def broken_reply_transaction(name: str) -> None:
        attempts.append(name)
        raise RuntimeError("the reply transaction failed\x00 (a bug)")

    sent.hooks.arm("inside_reply_tx", broken_reply_transaction)
    bad = ingest_raw(sent, hostile.good_reply(sent, PRIYA, REPORTS, "<bad@fernhollow.test>"), "test")
    assert bad.status == "quarantined" and len(attempts) == MAX_ATTEMPTS
    assert lead_state(sent, PRIYA, REPORTS) == "active"  # nothing half-applied
    with sent.uow() as uow:
        row = uow.session.get_one(m.InboundMessage, bad.inbound_id)
        assert (row.attempts, row.error) == (3, "RuntimeError: the reply transaction failed (a bug)")
        notice = uow.session.scalars(select(m.Notice).where(m.Notice.kind == "inbound_quarantined")).one()
        assert notice.lead_id is None and notice.payload["inbound_id"] == bad.inbound_id
        assert notice.recipient != NOBODY  # the owner of the workspace's first campaign
    assert [item["id"] for item in list_inbound(sent, [InboundStatus.QUARANTINED])] == [bad.inbound_id]

    sent.hooks.disarm()
    good = ingest_raw(sent, hostile.good_reply(sent, MARC, REPORTS, "<good@brightline.test>"), "test")
    assert good.status == "matched" and lead_state(sent, MARC, REPORTS) == "replied"
    # The same message delivered again is the same row: still quarantined, not re-applied.
    again = ingest_raw(sent, hostile.good_reply(sent, PRIYA, REPORTS, "<bad@fernhollow.test>"), "test")
    assert (again.duplicate, again.status) == (True, "quarantined")

    [retried] = retry(sent, [bad.inbound_id])  # a person, once the cause is fixed
    assert retried.status == "matched" and lead_state(sent, PRIYA, REPORTS) == "replied"
    with pytest.raises(IllegalInboundMove):
        retry(sent, [bad.inbound_id])  # applied once; never twice


def test_a_row_left_stored_by_a_crash_is_processed_by_the_sweep(sent: App, clock: FixedClock) -> None:
    with sent.uow() as uow:  # what a process killed between the store and the processing leaves
        inbound_id, _ = store_raw(uow, hostile.good_reply(sent, PRIYA, REPORTS, "<crash@x.test>"), "lmtp")
        uow.commit()
    assert retry_stored(sent) == []  # too young: its first processing may be running
    clock.advance(SETTLE)
    [result] = retry_stored(sent)
    assert (result.inbound_id, result.status) == (inbound_id, "matched")
    assert lead_state(sent, PRIYA, REPORTS) == "replied"


def test_every_status_is_listable_an_unknown_one_is_an_error_and_a_person_can_retry(
    sent: App,
) -> None:
    sent.hooks.arm("inside_reply_tx", lambda _name: (_ for _ in ()).throw(RuntimeError("bug")))
    bad = ingest_raw(sent, hostile.good_reply(sent, PRIYA, REPORTS, "<bad@fernhollow.test>"), "test")
    sent.hooks.disarm()
    stranger = ingest_raw(sent, b"From: who@nowhere.test\r\nSubject: hi\r\n\r\nhello\r\n", "test")
    kept = json.loads(run_cli(sent, "inbound", "list", "--json").stdout)
    assert [(i["id"], i["status"]) for i in kept] == [
        (bad.inbound_id, "quarantined"),
        (stranger.inbound_id, "unmatched"),
    ]
    for status in InboundStatus:
        listed = run_cli(sent, "inbound", "list", "--status", status.value, "--json")
        assert listed.exit_code == 0, listed.output
    assert len(json.loads(run_cli(sent, "inbound", "list", "--status", "all", "--json").stdout)) == 2
    unknown = run_cli(sent, "inbound", "list", "--status", "lost")
    assert unknown.exit_code == 2 and "unknown status 'lost'" in unknown.output
    retried = run_cli(sent, "inbound", "retry", str(bad.inbound_id))
    assert retried.exit_code == 0 and "matched" in retried.stdout
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    again = run_cli(sent, "inbound", "retry", str(bad.inbound_id))
    assert again.exit_code == 1 and "cannot go from matched to stored" in again.output


def test_the_long_running_sources_sweep_rows_left_stored(sent: App, clock: FixedClock) -> None:
    with sent.uow() as uow:
        inbound_id, _ = store_raw(uow, hostile.good_reply(sent, PRIYA, REPORTS, "<left@x.test>"), "imap")
        uow.commit()
    clock.advance(SETTLE)
    with Sweeper(sent, interval=0.05):  # what serve, listen and poll run, every minute
        wait_for(lambda: lead_state(sent, PRIYA, REPORTS) == "replied", "the sweep processed the row")
    assert list_inbound(sent, [InboundStatus.MATCHED])[0]["id"] == inbound_id


def test_a_message_over_a_shape_limit_is_stored_as_refused_and_not_processed(sent: App) -> None:
    parts = b"".join(b"--b\r\nContent-Type: text/plain\r\n\r\nhi\r\n" for _ in range(10_001))
    crafted = hostile.good_reply(sent, PRIYA, REPORTS, "<crafted@x.test>").replace(
        b"\r\n\r\n", b'\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n' + parts, 1
    )
    result = ingest_raw(sent, crafted, "test")
    assert (result.status, result.duplicate) == ("refused", False)
    assert "MIME parts is over the limit" in result.detail
    assert lead_state(sent, PRIYA, REPORTS) == "active"  # kept for a person, not applied
    assert ingest_raw(sent, crafted, "test").duplicate
    with sent.uow() as uow:
        notices = uow.session.scalars(
            select(m.Notice.payload).where(m.Notice.kind == "inbound_refused")
        ).all()
    assert [n["inbound_id"] for n in notices] == [result.inbound_id]  # one notice, not one per copy
