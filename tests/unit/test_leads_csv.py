"""Lead files: good rows kept, bad rows reported by line number, whole-file problems refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from replyguard.domain.leads_csv import LeadFileError, LeadRow, RowError, read_leads, safe_cell, write_csv

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HEADER = b"email,first_name,last_name,company,timezone\r\n"


def parse(data: bytes) -> tuple[list[LeadRow], list[RowError]]:
    rows = list(read_leads(data))
    return [r for r in rows if isinstance(r, LeadRow)], [r for r in rows if isinstance(r, RowError)]


def test_example_file_gives_eight_rows() -> None:
    good, bad = parse((EXAMPLES / "leads.csv").read_bytes())
    assert bad == []
    assert len(good) == 8
    priya = good[0]
    assert (priya.line, priya.email, priya.first_name, priya.company) == (
        2,
        "priya@fernhollow.test",
        "Priya",
        "Fernhollow",
    )
    assert priya.timezone == "America/Los_Angeles"
    assert priya.alt_emails == ("priya.raman.home@gmail-like.test",)
    assert priya.owner is None
    aisha = next(r for r in good if r.email == "aisha@meridian-health.test")
    assert aisha.timezone is None  # the campaign's zone applies
    assert next(r for r in good if r.first_name == "Lucía").company == "Grupo Mirador"
    assert [r.line for r in good] == list(range(2, 10))


def test_addresses_are_normalised_and_alternates_deduplicated() -> None:
    data = b'email,alt_emails,owner\n Ann@X.Test ,"ann@x.test; Ann.Home@Y.test ann.home@y.test",Boss@X.test\n'
    good, bad = parse(data)
    assert bad == []
    assert good[0].email == "ann@x.test"
    assert good[0].alt_emails == ("ann.home@y.test",)
    assert good[0].owner == "boss@x.test"


def test_bad_rows_are_reported_and_good_rows_kept() -> None:
    data = (
        HEADER
        + b"a@x.test,Ann,A,Acme,Europe/Berlin\r\n"  # 2
        + b"not-an-email,Bob,B,Acme,\r\n"  # 3
        + b"c@x.test,Cy,C,Acme,Mars/Base\r\n"  # 4
        + b"d@x.test,Di,D\r\n"  # 5: too few columns
        + b"A@X.test,Ann,Again,Acme,\r\n"  # 6: duplicate of line 2
        + b"e@x.test,\xe9ric,E,Acme,\r\n"  # 7: Latin-1, not UTF-8
        + b"f@x.test,Fay,F,Acme,,extra\r\n"  # 8: too many columns
        + b"g@x.test,Gus,G,Acme,\r\n"  # 9
    )
    good, bad = parse(data)
    assert [r.email for r in good] == ["a@x.test", "g@x.test"]
    assert [r.line for r in good] == [2, 9]
    messages = {e.line: e.message for e in bad}
    assert sorted(messages) == [3, 4, 5, 6, 7, 8]
    assert "not a valid email address" in messages[3]
    assert "'not-an-email'" in messages[3]
    assert "unknown time zone 'Mars/Base'" in messages[4]
    assert messages[5] == "expected 5 columns, found 3"
    assert messages[6] == "a@x.test appears again (first on line 2); row skipped"
    assert "not valid UTF-8" in messages[7]
    assert "first_name" in messages[7]
    assert messages[8] == "expected 5 columns, found 6"


def test_crlf_inside_a_quoted_name_is_rejected_at_the_line_it_starts() -> None:
    data = HEADER + b'a@x.test,"Ann\r\nBcc: everyone@x.test",A,Acme,\r\nb@x.test,Bo,B,Acme,\r\n'
    good, bad = parse(data)
    assert [r.email for r in good] == ["b@x.test"]
    assert len(bad) == 1
    assert bad[0].line == 2
    assert "first_name contains a line break" in bad[0].message
    assert good[0].line == 4  # the quoted field spanned lines 2 and 3


@pytest.mark.parametrize("sneaky", ["\u2028", "\x0b", "\x85", "\x00"])
def test_other_line_breaks_and_nul_in_a_field_are_rejected(sneaky: str) -> None:
    data = HEADER + f"a@x.test,Ann,A,Acme{sneaky}Corp,\r\n".encode()
    good, bad = parse(data)
    assert good == []
    assert "company contains a line break or NUL" in bad[0].message


def test_bom_is_ignored() -> None:
    good, bad = parse(b"\xef\xbb\xbf" + HEADER + b"a@x.test,Ann,A,Acme,\r\n")
    assert bad == []
    assert good[0].email == "a@x.test"


def test_blank_lines_are_skipped_but_counted() -> None:
    good, bad = parse(HEADER + b"\r\n,,,,\r\na@x.test,Ann,A,Acme,\r\n")
    assert bad == []
    assert good[0].line == 4


def test_custom_columns_become_fields() -> None:
    good, _ = parse(b"email,Region,first_name\na@x.test,EMEA,Ann\n")
    assert good[0].custom == {"region": "EMEA"}
    assert good[0].first_name == "Ann"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "the file is empty"),
        (b"first_name,last_name\nAnn,A\n", "no 'email' column"),
        (b"email,favourite colour\na@x.test,red\n", "cannot be used in templates"),
    ],
)
def test_whole_file_errors(data: bytes, expected: str) -> None:
    with pytest.raises(LeadFileError, match=expected):
        list(read_leads(data))


def test_a_quote_never_closed_refuses_the_file_instead_of_swallowing_the_rows_after_it() -> None:
    data = b'email,first_name,company\na@x.test,"Ann,Acme\nb@x.test,Bob,Beta\nc@x.test,Cy,Gamma\n'
    with pytest.raises(LeadFileError, match=r"line 2: a quote opened there is never closed, so lines 2-4"):
        list(read_leads(data))


def test_quoted_cells_over_several_lines_and_doubled_quotes_still_read() -> None:
    data = b'email,company\na@x.test,"Acme\nInc"\nb@x.test,"say ""hi"""\n'
    good, bad = parse(data)
    assert [r.line for r in bad] == [2]  # a line break is refused in a header value, by its line
    assert [(r.line, r.company) for r in good] == [(4, 'say "hi"')]


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ("=1+1", "'=1+1"),
        ("+1 555 0100", "'+1 555 0100"),
        ("-Bo", "'-Bo"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("  =1+1", "'  =1+1"),  # Excel runs it after leading spaces too
        ("Ada = Lovelace", "Ada = Lovelace"),
        ("ada@one.test", "ada@one.test"),
        ("", ""),
    ],
)
def test_an_exported_cell_never_starts_a_formula(cell: str, shown: str) -> None:
    assert safe_cell(cell) == shown
    assert write_csv(["c"], [[cell]]).splitlines()[1].strip('"') == shown.replace('"', '""')
