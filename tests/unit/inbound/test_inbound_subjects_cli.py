"""Subject normalisation, the inspect command, and robustness against arbitrary bytes."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replyguard.domain.inbound import MessageParseError, classify, normalize_subject
from replyguard.domain.inbound.subjects import subject_key
from replyguard.entrypoints.cli.inspect_cmd import run as inspect_run


@pytest.mark.parametrize(
    ("subject", "expected"),
    [
        ("RE: AW: R: Angebot Q3", "Angebot Q3"),
        ("Re[2]: Angebot", "Angebot"),
        ("SV: VS: Pris", "Pris"),
        ("Antw: Offerte", "Offerte"),
        ("RIF: Offerta", "Offerta"),
        ("Réf. : Offre", "Offre"),
        ("Odp: Oferta", "Oferta"),
        ("TR: Fwd: WG: Offre", "Offre"),
        ("Re:   Re: spaced   out", "spaced out"),
        ("Angebot Q3", "Angebot Q3"),
    ],
)
def test_normalize_subject(subject, expected):
    assert normalize_subject(subject) == expected


def test_subject_key_ignores_case_and_list_tags():
    assert subject_key("AW: [Sales] ANGEBOT q3") == subject_key("Angebot Q3")


def test_inspect_prints_json(tmp_path, capsys, mail):
    path = tmp_path / "reply.eml"
    path.write_bytes(mail("Ja, gerne.\n\nViele Grüße\nJana", subject="AW: Angebot"))
    assert inspect_run([str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "human_reply"
    assert out["return_date"] is None
    assert out["reply_text"] == "Ja, gerne."
    assert out["evidence"] == ["default:human"]


def test_inspect_table_and_errors(tmp_path, capsys, mail):
    path = tmp_path / "reply.eml"
    path.write_bytes(mail("Hello"))
    assert inspect_run([str(path)]) == 0
    assert "human_reply" in capsys.readouterr().out
    empty = tmp_path / "empty.eml"
    empty.write_bytes(b"")
    assert inspect_run([str(empty), "--json"]) == 2
    assert "not a readable email" in capsys.readouterr().err
    assert inspect_run([str(tmp_path / "missing.eml"), "--json"]) == 2


def test_non_mail_input_raises_parse_error():
    for raw in (b"", b"   \n\n", b"just some words without any header"):
        with pytest.raises(MessageParseError):
            classify(raw)


SEED = (
    b"From: a@example.org\r\nSubject: =?utf-8?q?Re=3A_x?=\r\nDate: Mon, 15 Jul 2024 10:00 +0200\r\n"
    b'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\r\n\r\n'
    b"--B\r\nContent-Type: text/plain\r\n\r\nuntil 05/07 back on Monday\r\n"
    b"--B\r\nContent-Type: message/delivery-status\r\n\r\nStatus: 5.1.1\r\nAction: failed\r\n"
    b"--B--\r\n"
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=600))
def test_arbitrary_bytes_only_raise_parse_error(data):
    with contextlib.suppress(MessageParseError):
        classify(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(SEED) - 1), st.binary(min_size=0, max_size=8)), max_size=6))
def test_mutated_messages_only_raise_parse_error(edits):
    data = bytearray(SEED)
    for pos, chunk in edits:
        data[pos : pos + len(chunk)] = chunk
    try:
        result = classify(bytes(data))
    except MessageParseError:
        return
    json.dumps(result.to_json(), ensure_ascii=False)


def test_inspect_prints_one_json_line_per_message_of_an_mbox_and_of_files(tmp_path, capsys, mail):
    mbox = tmp_path / "box.mbox"
    one, two = mail("Ja, gerne."), mail("Please unsubscribe me.")
    mbox.write_bytes(
        b"From a@b Mon Jul 15 10:00:00 2024\n"
        + one
        + b"\n\nFrom a@b Mon Jul 15 10:01:00 2024\n"
        + two
        + b"\n"
    )
    single = tmp_path / "one.eml"
    single.write_bytes(one)
    assert inspect_run([str(mbox), str(single), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["kind"] for line in lines] == ["human_reply", "unsubscribe", "human_reply"]
    assert lines[2]["origin"] == str(single)
    assert lines[0]["origin"] != lines[1]["origin"]


def test_launcher_finds_the_command_after_global_options():
    from replyguard.entrypoints.cli.launcher import _command

    assert _command(["--db", "sqlite:///x.db", "--now", "2024-07-15", "inspect", "a.eml"]) == 4
    assert _command(["--json"]) is None


def test_inspect_names_an_email_replyguard_sent_as_ours(tmp_path, capsys):
    """`inspect` on a file of our own outbox said `human_reply`: ingest keeps such an email as
    `ours`; inspect says the same, from the Message-ID and send key the email carries."""
    from datetime import UTC, datetime

    from replyguard.domain.message_ids import message_id_for
    from replyguard.domain.outgoing import OutgoingEmail, message_bytes

    key = "02b0d9ec8155ec928d7986e83188d7b5"
    ours = OutgoingEmail(
        send_key=key,
        message_id=message_id_for(key, "northwind.test"),
        from_name="Dana",
        from_address="dana@northwind.test",
        to_name="Ben",
        to_address="ben@pinecrest.test",
        subject="Quick question",
        body="Hi Ben,\n\nwould a call next week be useful?\n\nDana\n",
        date=datetime(2026, 12, 7, 16, tzinfo=UTC),
    )
    path = tmp_path / "sent.eml"
    path.write_bytes(message_bytes(ours))
    assert inspect_run([str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["kind"], shown["ours"]) == ("ours", True)
    assert inspect_run([str(path)]) == 0
    assert "ours: an email replyguard sent" in capsys.readouterr().out
    # The same words with a send key that does not match its Message-ID: not ours.
    path.write_bytes(message_bytes(ours).replace(f"Send-Key: {key}".encode(), b"Send-Key: 0000"))
    assert inspect_run([str(path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["ours"] is False and shown["kind"] == "human_reply"
