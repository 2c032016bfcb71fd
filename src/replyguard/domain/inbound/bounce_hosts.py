# ruff: noqa: E501  (code tables read best one provider per line)
"""Bounce reasons from the documented error codes of a few large mail providers.

Contract: `reason_from_host(facts)` returns the reason a provider's own error code or message
means when the recipient's domain or the refusing host belongs to that provider, else None.
Never raises.

Each table comes from the provider's public error-code page (named next to it); sisimai keeps
the same kind of tables ("rhost" modules, https://libsisimai.org, BSD-2-Clause), which is where
we learnt which providers are worth one. A code beats wording: "550 5.1.1 ... IB607" from
GoDaddy is a sending-rate limit, not a missing user.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol


class _Facts(Protocol):
    """The fields of bounce_reasons.Facts this module reads (a protocol: no import cycle)."""

    @property
    def status(self) -> str | None: ...
    @property
    def reply_code(self) -> str | None: ...
    @property
    def command(self) -> str | None: ...
    @property
    def diagnostic(self) -> str: ...
    @property
    def rhost(self) -> str | None: ...
    @property
    def domain(self) -> str | None: ...


def _first(diagnostic: str, table: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    for reason, phrases in table:
        if any(p in diagnostic for p in phrases):
            return reason
    return None


# Orange / La Poste (https://smtpfieldmanual.com/provider/orange): "LPN007_416", "OFR_417".
_ORANGE_CODES = {
    "101": "blocked", "102": "blocked", "103": "blocked", "104": "toomanyconn", "305": "securityerror",
    "401": "authfailure", "402": "securityerror", "403": "rejected", "405": "rejected", "415": "rejected",
    "416": "userunknown", "417": "mailboxfull", "420": "suspend", "421": "rejected", "426": "suspend",
    "505": "systemerror", "506": "spamdetected", "510": "blocked", "514": "mesgtoobig",
    "517": "authfailure", "630": "policyviolation", "999": "blocked",
}  # fmt: skip
_ORANGE_LABEL = re.compile(r"\b(?:lpnaaa|lpn|ofr|ouk)[-_]?(\w*)")


def _orange(f: _Facts) -> str | None:
    labels = _ORANGE_LABEL.findall(f.diagnostic)
    if labels:
        return _ORANGE_CODES.get(labels[-1][-3:])
    return "authfailure" if "spf/dns de votre nom de domaine" in f.diagnostic else None


# GoDaddy (https://ca.godaddy.com/help/fix-rejected-email-with-a-bounce-error-40685): " IB607".
_GODADDY_CODES = {
    "ib401": "securityerror", "ib501": "notcompliantrfc", "ib502": "notcompliantrfc", "ib506": "rejected",
    "ib508": "authfailure", "ib108": "requireptr", "ib212": "spamdetected", "ib705": "virusdetected",
    "ib605": "toomanyconn", "ib007": "toomanyconn", "ib101": "speeding", "ib110": "blocked", "ib111": "blocked",
    "ib112": "blocked", "ib113": "blocked", "ib504": "speeding", "ib510": "speeding", "ib607": "speeding",
    "ib103": "badreputation", "ib104": "blocked", "ib105": "blocked", "ib106": "blocked",
}  # fmt: skip
_GODADDY_TEXT = (
    ("blocked", ("rbl reject", "www.spamhaus.org/query/bl?ip=")),
    ("expired", ("has been in the queue too long", "delivery timeout")),
    ("mailboxfull", ("account storage limit",)),
    ("spamdetected", ("message rejected for spam or virus content",)),
    ("suspend", ("account disabled",)),
    ("systemerror", ("message is looping",)),
    ("userunknown", ("recipient not found", "account does not exist")),
)
_GODADDY_LABEL = re.compile(r" (ib\d{3})\b")


def _godaddy(f: _Facts) -> str | None:
    label = _GODADDY_LABEL.search(f.diagnostic)
    if label and label.group(1) in _GODADDY_CODES:
        return _GODADDY_CODES[label.group(1)]
    return _first(f.diagnostic, _GODADDY_TEXT)


# Cox (https://www.cox.com/residential/support/email-error-codes.html): "AUP#CXBL".
_COX_CODES = {
    "cxbl": "blocked", "cxdns": "requireptr", "cxsndr": "authfailure", "cxsmtp": "rejected",
    "cxcnct": "toomanyconn", "cxmxrt": "toomanyconn", "cdrbl": "blocked", "cxthrt": "securityerror",
    "cxmj": "securityerror",
}  # fmt: skip
_COX_TEXT = (
    ("blocked", ("cox too many bad commands from", "too many invalid recipients")),
    ("requireptr", ("dns check failure - try again later", "rejected - no rdns")),
    ("policyviolation", ("esmtp no data before greeting", "attachment extension is forbidden")),
    ("rejected", ("sender rejected",)),
    ("systemerror", ("esmtp server temporarily not available",)),
    (
        "toomanyconn",
        ("too many sessions from", "requested action aborted: try again later", "message threshold exceeded"),
    ),
    ("userunknown", ("recipient rejected",)),
)
_AUP = re.compile(r"aup#([\w-]+)")


def _cox(f: _Facts) -> str | None:
    label = _AUP.search(f.diagnostic)
    code = label.group(1) if label else ""
    if code in _COX_CODES:
        return _COX_CODES[code]
    if code.startswith("ipbl"):
        return "blocked"  # the sending IP is on one of the blocklists Cox consults
    if code.startswith("urlbl"):
        return "spamdetected"  # a URL in the message is on a blocklist
    return _first(f.diagnostic, _COX_TEXT)


# Spectrum / Charter (https://www.spectrumbusiness.net/support/internet/understanding-email-error-codes):
# "AUP#I-1310", "AUP#O-1000": four digits; ranges of codes share a reason.
_SPECTRUM_RANGES = (
    (1000, 1000, "blocked"), (1010, 1010, "rejected"), (1020, 1080, "rejected"), (1090, 1090, "systemerror"),
    (1100, 1150, "requireptr"), (1160, 1190, "policyviolation"), (1200, 1210, "blocked"), (1220, 1250, "blocked"),
    (1260, 1260, "networkerror"), (1300, 1340, "toomanyconn"), (1350, 1490, "speeding"), (1500, 1500, "rejected"),
    (1520, 1520, "rejected"), (1530, 1530, "mesgtoobig"), (1540, 1550, "speeding"), (1560, 1560, "policyviolation"),
    (1580, 1580, "speeding"),
)  # fmt: skip
_SPECTRUM_CODE = re.compile(r"aup#\D*(\d{4})\b")


def _spectrum(f: _Facts) -> str | None:
    found = _SPECTRUM_CODE.search(f.diagnostic)
    if not found:
        return None
    code = int(found.group(1))
    return next((reason for low, high, reason in _SPECTRUM_RANGES if low <= code <= high), None)


# Tencent QQ Mail (https://service.mail.qq.com/detail/122).
_TENCENT_TEXT = (
    ("authfailure", ("spf check failed", "dmarc check failed")),
    ("blocked", ("suspected bounce attacks", "suspected spam ip", "connection denied")),
    ("mesgtoobig", ("message too large",)),
    ("rejected", ("suspected spam", "mail is rejected by recipients")),
    ("spamdetected", ("spam is embedded in the email", "mail content denied")),
    ("speeding", ("mailbox unavailable or access denined", "frequency of receiving messages is limited")),
    ("suspend", ("is a deactivated mailbox",)),
    ("syntaxerror", ("bad address syntax",)),
    (
        "toomanyconn",
        (
            "ip frequency limited",
            "domain frequency limited",
            "sender frequency limited",
            "connection frequency limited",
        ),
    ),
    ("userunknown", ("mailbox not found",)),
)

# Yahoo Inc. (https://senders.yahooinc.com/smtp-error-codes).
_YAHOO_TEXT = (
    ("authfailure", ("yahoo requires all senders to authenticate with either spf or dkim",)),
    ("blocked", (" because the ip is in spamhaus's list;", "not accepted from ip addresses on spamhaus xbl")),
    ("norelaying", ("relaying denied for ",)),
    ("notcompliantrfc", ("headers are not rfc compliant",)),
    ("policyviolation", ("not accepted for policy reasons",)),
    (
        "rejected",
        (
            "temporarily deferred due to unexpected volume or user complaints",
            "due to unresolvable rfc.5321 domain",
            " will be permanently deferred",
        ),
    ),
    ("speeding", ("user is receiving mail too quickly",)),
    ("suspend", (" is no longer valid.", "this mailbox is disabled")),
    ("syntaxerror", ("syntax error in parameters or arguments",)),
    ("toomanyconn", ("max message per connection reached",)),
    ("userunknown", ("dd this user doesn't have a ", "mailbox not found")),
)

# NTT DOCOMO: "550 Unknown user" after DATA was, until 2025, its answer for mail its users'
# domain filters refuse, so only a refusal at RCPT TO (or a 5.1.1) is a missing user; with no
# stage named it stays a filter.
_DOCOMO_TEXT = (
    ("mailboxfull", ("552 too much mail data",)),
    ("syntaxerror", ("503 bad sequence of commands", "504 command parameter not implemented")),
    ("toomanyconn", ("552 too many recipients",)),
)


def _docomo(f: _Facts) -> str | None:
    if f.status == "5.1.1":
        return "userunknown"
    if f.status == "5.2.0":
        return "filtered"
    found = _first(f.diagnostic, _DOCOMO_TEXT)
    if found or "550 unknown user" not in f.diagnostic:
        return found
    return {"RCPT": "userunknown", "DATA": "rejected"}.get(f.command or "", "filtered")


# Mimecast (https://community.mimecast.com/s/article/Mimecast-SMTP-Error-Codes-842605754): the
# reply code and the message together.
_MIMECAST = (
    ("authfailure", "550", ("spf sender invalid - envelope rejected", "dkim sender invalid - envelope rejected", "dmarc sender invalid - envelope rejected")),
    ("badreputation", "451", ("internal resources are temporarily unavailable",)),
    ("badreputation", "550", ("local ct ip reputation - (reject)",)),
    ("blocked", "421", ("sender address blocked",)),
    ("blocked", "451", ("recipient temporarily unavailable", "ip temporarily blacklisted")),
    ("failedstarttls", "553", ("this route requires encryption (tls)", "this route requires tls version 1.2 or greater", "this route requires high-strength ciphers")),
    ("mesgtoobig", "554", ("maximum email size exceeded",)),
    ("networkerror", "554", ("mail loop detected",)),
    ("norelaying", "451", ("open relay not allowed", "open relay is not allowed")),
    ("notaccept", "451", ("account inbounds disabled",)),
    ("policyviolation", "550", ("anti-spoofing policy - inbound not allowed", "rejected by header-based anti-spoofing policy", "message bounced due to content examination policy")),
    ("policyviolation", "554", ("host network not allowed", "host network, not allowed")),
    ("rejected", "550", ("administrative prohibition envelope blocked", "envelope blocked - user entry", "envelope blocked - user domain entry", "envelope rejected - block policy for envelope from address")),
    ("securityerror", "535", ("incorrect authentication data",)),
    ("securityerror", "550", ("submitter failed to authenticate",)),
    ("systemerror", "451", ("unable to process connection at this time", "message ended early", "unable to process command", "unable to process an email at this time")),
    ("toomanyconn", "451", ("account service is temporarily unavailable",)),
    ("toomanyconn", "452", ("too many recipients",)),
    ("toomanyconn", "550", ("exceeding outbound thread limit",)),
    ("userunknown", "501", ("invalid address",)),
    ("userunknown", "550", ("invalid recipient",)),
    ("virusdetected", "554", ("email rejected due to security policies",)),
)  # fmt: skip


def _mimecast(f: _Facts) -> str | None:
    for reason, reply, phrases in _MIMECAST:
        if f.reply_code == reply and any(p in f.diagnostic for p in phrases):
            return reason
    return None


# au by KDDI (https://www.au.com/support/service/internet/trouble/mail/01/): "550 : User unknown"
# (no address) is its answer for mail the recipient's filter refuses; "<address>: User unknown"
# is a missing user.
def _kddi(f: _Facts) -> str | None:
    if "550 : user unknown" in f.diagnostic:
        return "filtered"
    return "userunknown" if ">: user unknown" in f.diagnostic else None


_Reader = Callable[[_Facts], str | None]
# (recipient domains, remote host suffixes, reader)
_PROVIDERS: tuple[tuple[tuple[str, ...], tuple[str, ...], _Reader], ...] = (
    (("laposte.net", "orange.fr", "wanadoo.fr"), (".laposte.net", ".orange.fr", ".wanadoo.fr"), _orange),
    ((), ("smtp.secureserver.net", "mailstore1.secureserver.net"), _godaddy),
    (("cox.net",), ("cox.net",), _cox),
    (("charter.net",), ("charter.net",), _spectrum),
    (("qq.com",), (".qq.com",), lambda f: _first(f.diagnostic, _TENCENT_TEXT)),
    ((), (".yahoodns.net",), lambda f: _first(f.diagnostic, _YAHOO_TEXT)),
    (("docomo.ne.jp",), ("mfsmax.docomo.ne.jp",), _docomo),
    ((), (".mimecast.com",), _mimecast),
    (("ezweb.ne.jp", "au.com"), (".ezweb.ne.jp", "msmx.au.com"), _kddi),
)


def _provider(f: _Facts) -> _Reader | None:
    domain, host = (f.domain or "").lower(), (f.rhost or "").lower()
    for domains, _hosts, reader in _PROVIDERS:
        if domain and any(domain == d or d.endswith("." + domain) for d in domains):
            return reader
    for _domains, hosts, reader in _PROVIDERS:
        if host and any(host.endswith(h) for h in hosts):
            return reader
    return None


def reason_from_host(f: _Facts) -> str | None:
    """The provider's reason for this failure, or None; see the module docstring."""
    if not f.diagnostic:
        return None
    reader = _provider(f)
    return reader(f) if reader else None
