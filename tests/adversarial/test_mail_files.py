"""Item 5 of issue 7: `replyguard ingest` reads the files real mailboxes are made of.

Each case broke before: an mbox that starts with a blank line was one message (an
unsubscribe inside it was lost), a BOM or gzip gave one unparsable message with no hint, an
unquoted `From ` line in a body split its message, and a Maildir's parent picked up `tmp/`
and index files. Plus: a message over the size limit is kept as `refused` (its head and the
reason) and the messages after it are read.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
from pathlib import Path

import pytest

from replyguard.adapters.mail_files import MailSourceError, iter_messages
from replyguard.bootstrap import App
from tests.adversarial import hostile
from tests.adversarial.cli import run_cli
from tests.integration.test_http_inbound import PRIYA
from tests.support.scenario import FORECASTING, REPORTS, lead_state

MARC = "marc.keller@brightline-logistics.test"
SEP = b"From someone@example.test Mon Dec  7 10:00:00 2026\n"


def msg(n: int, body: bytes = b"hello\n") -> bytes:
    return b"From: a%d@example.test\nSubject: m%d\nMessage-ID: <m%d@example.test>\n\n" % (n, n, n) + body


def mbox(*messages: bytes) -> bytes:
    return b"".join(SEP + m + b"\n" for m in messages)


def read(data: bytes, **kw: int) -> list[bytes]:
    return [item.raw for item in iter_messages(["-"], io.BytesIO(data), **kw)]


def test_an_mbox_starting_with_blank_lines_is_still_an_mbox() -> None:
    assert read(b"\n\r\n" + mbox(msg(1), msg(2), msg(3))) == [msg(1), msg(2), msg(3)]


@pytest.mark.parametrize(
    "wrap",
    [
        lambda d: b"\xef\xbb\xbf" + d,
        gzip.compress,
        bz2.compress,
        lzma.compress,
        lambda d: gzip.compress(b"\xef\xbb\xbf" + d),
    ],
    ids=["bom", "gzip", "bzip2", "xz", "gzip-of-bom"],
)
def test_bom_and_compressed_mboxes_are_read(wrap: object) -> None:
    data = wrap(mbox(msg(1), msg(2)))  # type: ignore[operator]
    assert read(data) == [msg(1), msg(2)]


@pytest.mark.parametrize(
    ("data", "hint"),
    [
        (b"\x28\xb5\x2f\xfd" + b"\0" * 20, "zstd archive: unpack it"),
        (b"PK\x03\x04" + b"\0" * 20, "zip archive: unpack it"),
        ("From: a@b\n\nhi\n".encode("utf-16"), "UTF-16 text"),
    ],
    ids=["zstd", "zip", "utf-16"],
)
def test_what_cannot_be_read_gets_a_clear_error(data: bytes, hint: str) -> None:
    with pytest.raises(MailSourceError, match=hint):
        read(data)


def test_an_unquoted_from_line_in_a_body_does_not_split_its_message() -> None:
    body = (
        b"Here is the plan.\n\nFrom there we go on to the next step.\n\n"
        b"From bob Mon Dec  7 10:00:00 2026\nwas the line our exporter forgot to quote.\n"
    )
    assert read(mbox(msg(1, body), msg(2))) == [msg(1, body), msg(2)]


@pytest.mark.parametrize(
    "separator",
    [
        b"From - Mon Dec 07 10:00:00 2026\n",  # Thunderbird
        b"From 1234567890@xxx Mon Dec 07 10:00:00 +0000 2026\n",  # Gmail Takeout
        b"From MAILER-DAEMON  Wed Apr 20 23:34:45 2022\n",  # Postfix, two spaces
        b"From a@b.test Mon Dec  7 10:00 2026\r\n",  # no seconds, CRLF
    ],
)
def test_the_separators_real_exporters_write_are_recognised(separator: bytes) -> None:
    data = separator + msg(1) + b"\n" + separator + msg(2)
    assert read(data) == [msg(1), msg(2)]


def test_pointing_at_a_maildirs_parent_reads_cur_and_new_only(tmp_path: Path) -> None:
    for user in ("ana", "ben"):
        box = tmp_path / user / "Maildir"
        for sub in ("cur", "new", "tmp"):
            (box / sub).mkdir(parents=True)
        (box / "new" / f"1.{user}").write_bytes(msg(1))
        (box / "cur" / f"2.{user}:2,S").write_bytes(msg(2))
        (box / "tmp" / f"3.{user}").write_bytes(b"From: half-written")
        for index in (
            "dovecot.index",
            "dovecot.index.log",
            "dovecot-uidlist",
            "dovecot-keywords",
            "maildirsize",
            "subscriptions",
            "courierimapuiddb",
        ):
            (box / index).write_bytes(b"\x00binary index\x01")
        (box / ".Sent" / "cur").mkdir(parents=True)
        (box / ".Sent" / "cur" / f"4.{user}").write_bytes(msg(4))
    items = list(iter_messages([str(tmp_path)], io.BytesIO()))
    assert sorted(i.raw for i in items) == sorted([msg(1), msg(2), msg(4)] * 2)
    assert not any({"tmp", "dovecot.index"} & set(Path(i.origin).relative_to(tmp_path).parts) for i in items)


def test_a_folder_of_eml_files_skips_hidden_tmp_and_index_files(tmp_path: Path) -> None:
    (tmp_path / "a.eml").write_bytes(msg(1))
    (tmp_path / ".DS_Store").write_bytes(b"\x00")
    (tmp_path / "dovecot.index.cache").write_bytes(b"\x00")
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "b.eml").write_bytes(msg(2))
    assert [i.raw for i in iter_messages([str(tmp_path)], io.BytesIO())] == [msg(1)]


def test_a_message_over_the_limit_is_refused_with_its_head_and_the_next_is_read() -> None:
    big = msg(1, b"x" * 5000 + b"\n")
    items = list(iter_messages(["-"], io.BytesIO(mbox(big, msg(2))), max_bytes=2000))
    assert [(i.refused is not None, i.raw) for i in items] == [
        (True, b"From: a1@example.test\nSubject: m1\nMessage-ID: <m1@example.test>\n\n"),
        (False, msg(2)),
    ]
    assert "over the limit of 2000" in (items[0].refused or "")
    single = list(iter_messages(["-"], io.BytesIO(big), max_bytes=2000))
    assert [i.refused is not None for i in single] == [True]


def test_ingest_of_an_mbox_with_a_leading_blank_line_applies_every_message(sent: App, tmp_path: Path) -> None:
    # The unsubscribe was lost before: the whole file was stored as one message.
    unsubscribe = hostile.good_reply(sent, PRIYA, REPORTS, "<unsub@fernhollow.test>").replace(
        b"Happy to talk next week.", b"Please unsubscribe me from this list."
    )
    marc = hostile.good_reply(sent, MARC, REPORTS, "<marc@brightline.test>")
    path = tmp_path / "export.mbox"
    path.write_bytes(b"\n" + mbox(unsubscribe, marc))
    result = run_cli(sent, "ingest", str(path))
    assert result.exit_code == 0, result.output
    assert "2 matched" in result.stdout
    assert [lead_state(sent, PRIYA, p) for p in (REPORTS, FORECASTING)] == ["unsubscribed"] * 2
    assert lead_state(sent, MARC, REPORTS) == "replied"


def test_ingest_goes_on_past_a_message_the_database_refused_before(sent: App, tmp_path: Path) -> None:
    # On PostgreSQL this message failed on every run, and ingest exited 1 at it every time.
    path = tmp_path / "replies.mbox"
    path.write_bytes(
        mbox(hostile.escape_charset(sent), hostile.good_reply(sent, MARC, REPORTS, "<m@b.test>"))
    )
    for _run in range(2):  # the second run: both are duplicates, nothing is applied twice
        result = run_cli(sent, "ingest", str(path))
        assert result.exit_code == 0, result.output
    assert "2 duplicate" in result.stdout
    assert lead_state(sent, PRIYA, REPORTS) == "replied"
    assert lead_state(sent, MARC, REPORTS) == "replied"
