"""Subject normalisation, the inspect command, and robustness against arbitrary bytes."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replyguard.domain.inbound import MessageParseError, classify, normalize_subject
from replyguard.domain.inbound.subjects import subject_key
from replyguard.entrypoints.cli.inspect_cmd import inspect_command


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
    assert inspect_command(path, as_json=True) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "human_reply"
    assert out["return_date"] is None
    assert out["reply_text"] == "Ja, gerne."
    assert out["evidence"] == ["default:human"]


def test_inspect_table_and_errors(tmp_path, capsys, mail):
    path = tmp_path / "reply.eml"
    path.write_bytes(mail("Hello"))
    assert inspect_command(path, as_json=False) == 0
    assert "human_reply" in capsys.readouterr().out
    empty = tmp_path / "empty.eml"
    empty.write_bytes(b"")
    assert inspect_command(empty, as_json=True) == 2
    assert "not a readable email" in capsys.readouterr().err
    assert inspect_command(tmp_path / "missing.eml", as_json=True) == 2


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
