"""Out-of-office text made of date keywords costs bounded work (issue 11, item 5).

A body of 64,000 characters of "until until ..." once made the return-date search read every
anchor (0.4 s of CPU); only the first 8,000 characters are read now. Work is counted, not timed.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from replyguard.domain.inbound import returndate
from replyguard.domain.inbound.returndate import find_return_date

SENT = datetime(2024, 7, 15, 10, 5, tzinfo=timezone(timedelta(hours=2)))


def test_a_date_beyond_the_first_8000_characters_is_not_read():
    filler = "I am travelling. " * 500  # 8,500 characters
    assert find_return_date(filler + "I will be back on July 22.", "", SENT, "", "en") == (None, None)
    day, _rule = find_return_date(filler[:6_000] + "I will be back on July 22.", "", SENT, "", "en")
    assert day is not None and day.isoformat() == "2024-07-22"


@pytest.mark.parametrize("word", ["until ", "bis ", "vom 15. bis ", "15.07.–", "from 1 to "])
def test_a_body_of_anchor_words_reads_a_bounded_number_of_spans(monkeypatch, word):
    calls = []
    original = returndate.parse_span

    def counting(span: str, lang: str, sent: datetime):  # type: ignore[no-untyped-def]
        calls.append(1)
        return original(span, lang, sent)

    monkeypatch.setattr(returndate, "parse_span", counting)
    text = word * (64_000 // len(word))
    find_return_date(text, "", SENT, "", None)
    assert len(calls) <= 8_000 // len(word) * 3 + 10  # at most a few anchors per word read
