"""Date ranges in out-of-office notices: the end of a range is the last day away.

Contract: `range_ends(text)` yields (position, end span) for each range written with a dash
("23.12.–06.01.", "15.07.2024 - 26.07.2024", "7/15 - 7/26", "15–26 juli", "July 15-26",
"23 December - 3 January", "7月15日～26日"); `starts_range(text, pos)` says whether the
"until" word at `pos` closes a range opened by a "from" word and a date or weekday ("vom 15.
bis", "od 15 do", "с 15 по", "from Monday until"). returndate.py reads the end span and gives
the day after it: a range's last day is a day away, whatever the language.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from replyguard.domain.inbound.fastdate import MONTH_ALT, WEEKDAY_ALT
from replyguard.domain.inbound.phrases import compile_lower

_DASH = r"[-–—~～〜－]"
_YEAR = r"(?:19|20)\d{2}"
# Each pattern reads `start DASH end` and names the end; text is lower-cased before searching.
_DASH_RANGES = tuple(
    compile_lower(src)
    for src in (
        # 23.12.–06.01. / 15.07.2024 - 26.07.2024 / 15.–26.7.2024 / 15. 7. – 26. 7. 2024
        rf"(?<![\d.])\d{{1,2}}\.(?:\s?\d{{1,2}}\.?)?(?:\s?{_YEAR})?\s*{_DASH}\s*"
        rf"(?P<end>\d{{1,2}}\.\s?\d{{1,2}}\.?(?:\s?{_YEAR}\b)?)",
        # 7/15 - 7/26 / 15/07/2024 – 26/07/2024
        rf"(?<![\d/])\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?\s*{_DASH}\s*(?P<end>\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?)\b",
        # 2024-07-15 – 2024-07-26 (a plain hyphen would join the two ISO dates into one token)
        r"\b\d{4}-\d{2}-\d{2}\s*(?:[–—~～〜]|\s-\s|\bto\b|\bbis\b)\s*(?P<end>\d{4}-\d{2}-\d{2})\b",
        # 15–26 juli / 15. – 26. Juli / 15-26 Temmuz / 15-26 de julio / 23 December - 3 January
        rf"(?<![\d.])\d{{1,2}}\.?(?:\s+(?:de\s+|of\s+)?(?:{MONTH_ALT})\.?)?\s*{_DASH}\s*"
        rf"(?P<end>\d{{1,2}}\.?\s+(?:de\s+|of\s+)?(?:{MONTH_ALT}))\b",
        # July 15 - August 2 / July 15-26 / július 15-26.
        rf"\b(?P<month>{MONTH_ALT})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?\s*{_DASH}\s*"
        rf"(?P<end>(?:{MONTH_ALT})\.?\s+\d{{1,2}}|\d{{1,2}}(?!\d))",
    )
)
# "7月15日から7月26日まで", "7月15日(月)～26日(金)", "7月15日至7月26日": the end's month may be left out.
_CJK_RANGE = re.compile(
    r"(\d{1,2})月(\d{1,2})[日号](?:[(（][^)）]{1,3}[)）])?\s*(?:から|より|至|到|[-~～〜－—])\s*"
    r"(?:(\d{1,2})月)?(\d{1,2})[日号]"
)


def range_ends(text: str) -> Iterator[tuple[int, str]]:
    """Where each dash range starts, and the text of its end date (a month added when the
    end is a bare day after a month name: "July 15-26" gives "july 26")."""
    if not any(ch.isdigit() for ch in text):
        return
    for pattern in _DASH_RANGES:
        for match in pattern.finditer(text):
            end = match.group("end")
            if end.isdigit() and "month" in pattern.groupindex:
                end = f"{match.group('month')} {end}"
            yield match.start(), end


def cjk_range_ends(text: str) -> Iterator[tuple[int, int, int]]:
    """(position, month, day) of the end of each Japanese or Chinese range."""
    for match in _CJK_RANGE.finditer(text):
        month = int(match.group(3) or match.group(1))
        yield match.start(), month, int(match.group(4))


_FROM = r"(?:from|vom|von|ab|van|från|fra|od|с|du|del|dal|desde|da|de)"
_START = compile_lower(
    rf"(?<!\w){_FROM}\s+(?:the\s+|dem\s+|den\s+|el\s+|dia\s+|dnia\s+|le\s+)?"
    rf"(?:\d|(?:{MONTH_ALT}|{WEEKDAY_ALT})\b)(?:[^.!?;:\n]|(?<=\d)\.){{0,30}}$"
)
_LOOK_BACK = 45


def starts_range(text: str, pos: int) -> bool:
    """True when the "until" word at `pos` ends a range: a "from" word followed by a date or
    a weekday comes shortly before it in the same sentence."""
    return _START.search(text, max(0, pos - _LOOK_BACK), pos) is not None


# "Monday to Friday", "Montag bis Freitag", "du lundi au vendredi", "Mo-Fr": opening hours, not
# an absence. An "until" word right after a weekday never introduces a return date.
_AFTER_WEEKDAY = compile_lower(rf"(?<!\w)(?:{WEEKDAY_ALT})\.?,?\s*$")


def after_weekday(text: str, pos: int) -> bool:
    """True when a weekday name ends right before `pos`."""
    return _AFTER_WEEKDAY.search(text, max(0, pos - 25), pos) is not None
