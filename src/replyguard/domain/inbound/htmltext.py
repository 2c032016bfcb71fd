"""HTML to plain text, optionally dropping the quoted history that mail clients mark up.

The converter is a small streaming `html.parser` subclass: it never raises on broken markup
and keeps paragraph and line breaks, which the plain-text quote rules rely on. Quote markers
are the ones Discourse's `HTML_EXTRACTERS` and talon recognise: a marked element is skipped
(Gmail's `.gmail_quote`, `blockquote`), and for Outlook-style separators (`#divRplyFwdMsg`,
`#Signature`, Thunderbird's `moz-cite-prefix`) everything from that point on is dropped.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK = frozenset(
    [
        "p",
        "div",
        "br",
        "tr",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "ul",
        "ol",
        "pre",
        "hr",
        "blockquote",
        "section",
        "article",
        "header",
        "footer",
        "title",
        "dt",
        "dd",
        "address",
    ]
)
_SKIP_CONTENT = frozenset({"script", "style", "head", "title"})
_VOID = frozenset(
    ["br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source", "wbr"]
)
# Elements whose content is quoted history or a signature: skipped, text after them is kept.
_SKIP_CLASS = re.compile(
    r"gmail_quote|gmail_signature|gmail_extra|moz-signature|protonmail_quote|"
    r"protonmail_signature|yahoo_quoted|AppleOriginalContents|zmail_extra|x_gmail_quote",
    re.IGNORECASE,
)
# Markers after which nothing is the sender's new text (Outlook puts the history after them).
_CUT_ID = re.compile(
    r"^(?:x_)?(?:divRplyFwdMsg|Signature|AppleMailSignature|OLK_SRC_BODY_SECTION|"
    r"mail-editor-reference-message-container|appendonsend)$",
    re.IGNORECASE,
)
_CUT_CLASS = re.compile(r"moz-cite-prefix|moz-forward|OutlookMessageHeader", re.IGNORECASE)
_CUT_ATTR = re.compile(r"messageReplySection|__", re.IGNORECASE)

CUT = "\x00CUT\x00"


class _Converter(HTMLParser):
    def __init__(self, cut_quotes: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.cut_quotes = cut_quotes
        self.parts: list[str] = []
        self.skip_tag: str | None = None
        self.skip_depth = 0
        self.hidden_depth = 0

    def _marked(self, tag: str, attrs: dict[str, str]) -> str | None:
        """'skip' or 'cut' when this element starts quoted history, else None."""
        if not self.cut_quotes:
            return None
        cls, ident = attrs.get("class", ""), attrs.get("id", "")
        if tag == "blockquote" or _SKIP_CLASS.search(cls):
            return "skip"
        if _CUT_ID.match(ident) or _CUT_CLASS.search(cls):
            return "cut"
        if attrs.get("name", "") == "messageReplySection" or _CUT_ATTR.fullmatch(
            attrs.get("data-marker", "-")
        ):
            return "cut"
        return None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip_tag is not None:
            if tag == self.skip_tag and tag not in _VOID:
                self.skip_depth += 1
            return
        if tag in _SKIP_CONTENT:
            self.hidden_depth += 1
            return
        mark = self._marked(tag, {k: v or "" for k, v in attrs})
        if mark == "cut":
            self.parts.append("\n" + CUT + "\n")
        elif mark == "skip" and tag not in _VOID:
            self.skip_tag, self.skip_depth = tag, 1
            self.parts.append("\n")
            return
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if self.skip_tag is not None:
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if self.skip_depth == 0:
                    self.skip_tag = None
            return
        if tag in _SKIP_CONTENT:
            self.hidden_depth = max(0, self.hidden_depth - 1)
            return
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.skip_tag is None and self.hidden_depth == 0:
            self.parts.append(re.sub(r"[ \t\r\n\xa0]+", " ", data))


def html_to_text(markup: str, *, cut_quotes: bool = False) -> str:
    """Render HTML as plain text. With `cut_quotes`, quoted history and signatures are dropped.

    Never raises: malformed markup yields whatever text could be read.
    """
    conv = _Converter(cut_quotes)
    try:
        conv.feed(markup)
        conv.close()
    except Exception:  # html.parser is lenient, but be certain a bad document cannot escape
        conv.parts.append("\n")
    text = "".join(conv.parts)
    if cut_quotes and CUT in text:
        text = text.split(CUT, 1)[0]
    lines = [line.strip() for line in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
