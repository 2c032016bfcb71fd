"""Property tests of the file, LMTP and IMAP sources with hostile messages, on SQLite and
PostgreSQL (a real Dovecot for IMAP, real sockets for LMTP). The invariants are in
strategies.py; here also: an mbox or Maildir gives back exactly the messages written to it.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import smtplib
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from imapclient.exceptions import IMAPClientError
from sqlalchemy import select

from replyguard.adapters.db import models as m
from replyguard.adapters.mail_files import iter_messages
from replyguard.bootstrap import App
from replyguard.domain.clock import FixedClock
from replyguard.service_layer.inbound.pollers import read_cursor
from tests.adversarial import strategies as S
from tests.adversarial.cli import run_cli
from tests.adversarial.hostile import good_reply
from tests.integration.test_imap_poller import FAST
from tests.integration.test_lmtp_listener import TO, listening
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.scenario import REPORTS, lead_state

SEPARATORS = [
    b"From someone@example.test Mon Dec  7 10:00:00 2026\n",
    b"From - Mon Dec 07 10:00:00 2026\n",
    b"From 1234@xxx Mon Dec 07 10:00:00 +0000 2026\n",
    b"From MAILER-DAEMON  Wed Apr 20 23:34:45 2022\n",
]


def mboxrd(messages: list[bytes], separator: bytes) -> bytes:
    """An mbox as mboxrd writers write it: `>*From ` lines get one more `>`."""
    out = []
    for raw in messages:
        lines = raw.splitlines(keepends=True)
        quoted = [b">" + line if line.lstrip(b">").startswith(b"From ") else line for line in lines]
        out.append(separator + b"".join(quoted) + b"\n")
    return b"".join(out)


def normalised(raw: bytes) -> bytes:
    """A message as a file can hold it: ending with a newline."""
    return raw if raw.endswith(b"\n") else raw + b"\n"


def test_mbox_and_maildir_give_back_every_message_and_ingest_keeps_them(
    sent: App, clock: FixedClock, tmp_path: Path
) -> None:
    targets = S.threads(sent)
    counter = itertools.count()

    @given(data=st.data())
    @S.PROPERTY_SETTINGS
    def run(data: st.DataObject) -> None:
        n = next(counter)
        written = [normalised(m) for m in data.draw(st.lists(S.messages(targets), min_size=1, max_size=4))]
        good = S.good_message(10**6 + n)
        box = mboxrd([*written, good], data.draw(st.sampled_from(SEPARATORS)))
        wrap = data.draw(st.sampled_from(["plain", "blank-first", "bom", "gzip"]))
        box = {
            "plain": box,
            "blank-first": b"\n" + box,
            "bom": b"\xef\xbb\xbf" + box,
            "gzip": gzip.compress(box),
        }[wrap]
        read = [item.raw for item in iter_messages(["-"], io.BytesIO(box))]
        assert read == [*written, good]  # nothing split, nothing merged, nothing lost

        maildir = tmp_path / f"Maildir{n}"
        for sub in ("cur", "new", "tmp"):
            (maildir / sub).mkdir(parents=True)
        for i, raw in enumerate(written):
            (maildir / data.draw(st.sampled_from(["cur", "new"])) / f"{i}.host:2,S").write_bytes(raw)
        (maildir / "tmp" / "half").write_bytes(b"From: half")
        (maildir / "dovecot.index.log").write_bytes(b"\x00\x01")
        path = tmp_path / f"box{n}.mbox"
        path.write_bytes(box)
        result = run_cli(sent, "ingest", str(maildir), str(path), "--json")
        assert result.exit_code == 0, result.output
        statuses = [m["status"] for m in json.loads(result.stdout)["messages"]]
        assert len(statuses) == 2 * len(written) + 1 and "stored" not in statuses
        assert statuses[-1] == "unmatched"  # the good message after the hostile ones
        S.assert_nothing_left_stored(sent)

    run()
    assert run_cli(sent, "ingest", "-").exit_code == 0  # stdin: nothing there, nothing done
    reply = tmp_path / "last.eml"
    reply.write_bytes(good_reply(sent, S.RESERVED, REPORTS, "<last@brightline.test>"))
    assert run_cli(sent, "ingest", str(reply)).exit_code == 0
    assert lead_state(sent, S.RESERVED, REPORTS) == "replied"
    S.assert_no_send_after_a_reply(sent, clock)


def test_lmtp_with_hostile_messages(sent: App, clock: FixedClock) -> None:
    targets = S.threads(sent)
    counter = itertools.count()

    with listening(sent) as port:

        def deliver(raw: bytes, *, bare: bool) -> int:
            with smtplib.LMTP("127.0.0.1", port) as client:
                client.ehlo_or_helo_if_needed()
                client.mail("sender@elsewhere.test")
                client.rcpt(TO)
                if not bare:  # smtplib's way: CRLF line ends, dots stuffed
                    return int(client.data(raw)[0])
                client.putcmd("data")
                assert client.getreply()[0] == 354
                stuffed = b"\n".join(
                    b"." + line if line.startswith(b".") else line for line in raw.split(b"\n")
                )
                client.send(stuffed + b"\r\n.\r\n")
                return int(client.getreply()[0])

        @given(raw=S.messages(targets), bare=st.booleans())
        @S.PROPERTY_SETTINGS
        def run(raw: bytes, bare: bool) -> None:
            assert deliver(raw, bare=bare) == 250  # stored, or stored and kept for a person
            assert deliver(S.good_message(2 * 10**6 + next(counter)), bare=False) == 250
            S.assert_nothing_left_stored(sent)

        run()
        assert deliver(good_reply(sent, S.RESERVED, REPORTS, "<lmtp-last@b.test>"), bare=False) == 250
    assert lead_state(sent, S.RESERVED, REPORTS) == "replied"
    S.assert_no_send_after_a_reply(sent, clock)


@pytest.fixture
def imap() -> Iterator[DovecotServer]:
    with DovecotServer(dovecot_or_skip()) as server:
        yield server


def test_imap_with_hostile_messages(sent: App, clock: FixedClock, imap: DovecotServer) -> None:
    targets = S.threads(sent)
    counter = itertools.count()
    assert sent.imap_poller(imap.url, timing=FAST).run_once() == 0  # the first start

    @given(raw=S.messages(targets))
    @S.PROPERTY_SETTINGS
    def run(raw: bytes) -> None:
        n = 3 * 10**6 + next(counter)
        rows_before = sum(S.inbound_rows(sent).values())
        with imap.client() as client:
            appended = 1
            try:
                client.append("INBOX", raw)
                appended = 2
            except IMAPClientError:  # Dovecot refused it: nothing to read then
                pass
            client.append("INBOX", S.good_message(n))
        poller = sent.imap_poller(imap.url, timing=FAST)
        assert poller.run_once() >= 1
        with imap.client() as client:
            newest = int(client.select_folder("INBOX", readonly=True)[b"UIDNEXT"]) - 1
        assert read_cursor(sent, poller.source.key).last_uid == newest  # moved past everything
        S.assert_nothing_left_stored(sent)
        # Nothing lost: the good message has its row, and the hostile one its own unless it is
        # the same message as one stored before (the store deduplicates).
        with sent.uow() as uow:
            assert uow.session.scalar(
                select(m.InboundMessage.id).where(m.InboundMessage.message_id == f"<digest-{n}@digest.test>")
            )
        assert rows_before + 1 <= sum(S.inbound_rows(sent).values()) <= rows_before + appended

    run()
    imap.append(good_reply(sent, S.RESERVED, REPORTS, "<imap-last@b.test>"))
    assert sent.imap_poller(imap.url, timing=FAST).run_once() == 1
    assert lead_state(sent, S.RESERVED, REPORTS) == "replied"
    S.assert_no_send_after_a_reply(sent, clock)
