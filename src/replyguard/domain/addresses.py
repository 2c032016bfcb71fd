"""Email addresses and header values: normalisation and the CR/LF/NUL guard.

Header injection (CWE-93) is refused at every door: names from CSV files, subjects from
templates, addresses, and again when a message is built.
"""

from __future__ import annotations

import re
from email.headerregistry import Address
from email.utils import parseaddr

# Every character str.splitlines() breaks on: the email package refuses them all in a header,
# so letting one through here would crash the send instead of rejecting the input.
_FORBIDDEN = re.compile(r"[\r\n\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Deliberately simple: one @, a dot in the domain, no spaces or angle brackets. Deliverability
# is decided by the receiving server, not by a regex.
_ADDRESS = re.compile(
    r"^[^@\s<>(),;:\"\[\]\\]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)


class InvalidAddress(ValueError):
    pass


class UnsafeHeaderValue(ValueError):
    pass


def check_header_value(field: str, value: str) -> str:
    """Return `value` unchanged, or raise if it could inject a header (CR, LF or NUL)."""
    if _FORBIDDEN.search(value):
        raise UnsafeHeaderValue(f"{field} contains a line break or NUL character: {value!r}")
    return value


def normalize_address(raw: str) -> str:
    """Lower-case, trimmed address, or InvalidAddress with a message that names the value."""
    check_header_value("email address", raw)
    value = raw.strip()
    if "<" in value:
        value = parseaddr(value)[1]
    value = value.strip().lower()
    if not _ADDRESS.match(value):
        raise InvalidAddress(f"not a valid email address: {raw!r}")
    return value


def base_address(address: str) -> str:
    """The address without a `+tag` in its local part (`ann+news@x.test` -> `ann@x.test`)."""
    local, _, domain = address.partition("@")
    return f"{local.split('+', 1)[0]}@{domain}"


def domain_of(address: str) -> str:
    return address.rpartition("@")[2].lower()


def format_address(display_name: str, address: str) -> Address:
    check_header_value("display name", display_name)
    local, _, domain = normalize_address(address).partition("@")
    return Address(display_name=display_name, username=local, domain=domain)


#: A From header longer than this names no one we trust: a real one is a few dozen characters.
MAX_FROM_CHARS = 2000


def strip_comments(value: str) -> str:
    """`value` without RFC 5322 comments (nested parentheses), each replaced by a space.

    Quoted strings are kept as they are, so a `(` inside quotes opens no comment. An unclosed
    comment runs to the end of the value, as a parser would read it.
    """
    if "(" not in value:
        return value
    out: list[str] = []
    depth, quoted, escaped = 0, False, False
    for ch in value:
        if escaped:
            escaped = False
            if not depth:
                out.append(ch)
        elif ch == "\\" and (quoted or depth):
            escaped = True
            if not depth:
                out.append(ch)
        elif depth:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if not depth:
                out.append(" ")
        elif quoted:
            quoted = ch != '"'
            out.append(ch)
        elif ch == "(":
            depth = 1
        else:
            quoted = ch == '"'
            out.append(ch)
    return "".join(out)


def sender_of(raw_from: str) -> str | None:
    """The one address a From header names, or None when it names none or several.

    Read from the RAW header value, before RFC 2047 words are decoded: an encoded display name
    (`=?utf-8?b?...?=`) can hold any text, including another person's address, and decoding
    first would let it pass for the sender. Rules: the header is split into mailboxes at
    top-level commas; a mailbox with an angle address (`Name <a@x>`) is that address whatever
    its display name says; one without is its bare `a@x`. Exactly one mailbox must name an
    address: two (`a@x, Name <b@y>`), two angle addresses in one mailbox, or a group, and we
    cannot tell who is speaking — None, which the caller treats as a stranger. So is a header
    whose quotes, comments or angle brackets do not close: each reader would end them
    elsewhere (`priya@x.test( <real@y.test>` is Priya to one parser and real@y to another).
    """
    if len(raw_from) > MAX_FROM_CHARS or not _balanced(raw_from):
        return None
    if ":" in strip_comments(_without_angles(raw_from)):
        return None
    found: list[str] = []
    for mailbox in _mailboxes(strip_comments(raw_from)):
        bare = _unquoted(mailbox)  # a quoted display name may hold anything, brackets too
        if bare.count("<") > 1:
            return None
        if "<" in bare:
            inner = bare.partition("<")[2].partition(">")[0]
            found.append(inner.rpartition(":")[2].strip())  # drop an obsolete route (@a,@b:)
        elif "@" in bare:
            token = mailbox.strip()
            if len(token.split()) != 1:
                return None
            found.append(token)
    return found[0] if len(found) == 1 and "@" in found[0] else None


def _mailboxes(value: str) -> list[str]:
    """Split at commas outside quotes and angle brackets."""
    parts: list[str] = []
    current: list[str] = []
    quoted = angled = escaped = False
    for ch in value:
        if escaped:
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"' and not angled:
            quoted = not quoted
        elif ch == "<" and not quoted:
            angled = True
        elif ch == ">" and not quoted:
            angled = False
        elif ch == "," and not (quoted or angled):
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _unquoted(value: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"?', " ", value)


def _without_angles(value: str) -> str:
    """Quoted strings and angle addresses removed: what is left is where a group's `:` shows."""
    return re.sub(r"<[^<>]*>", " ", _unquoted(value))


def _balanced(value: str) -> bool:
    """Quotes, comments and angle brackets all close, in the right order."""
    depth, quoted, escaped = 0, False, False
    brackets: list[str] = []  # the angle brackets outside quotes and comments
    for ch in value:
        if escaped:
            escaped = False
        elif ch == "\\" and (quoted or depth):
            escaped = True
        elif quoted:
            quoted = ch != '"'
        elif ch in "()":
            depth += 1 if ch == "(" else -1
            if depth < 0:
                return False
        elif not depth:
            quoted = ch == '"'
            brackets += [ch] if ch in "<>" else []
    pairs = "".join(brackets)
    return depth == 0 and not quoted and pairs == "<>" * (len(pairs) // 2)
