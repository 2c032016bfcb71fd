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
