"""Who really sent a message: the receiving side's Authentication-Results (RFC 8601), judged.

We do not verify DKIM, SPF or DMARC ourselves. SPF can only be checked by the server that saw
the connecting IP address; DKIM needs DNS at the moment of ingest (keys rotate, so an import
of old mail would fail them all) and the exact bytes that were signed (a webhook rebuilt from
parsed fields has other bytes). The receiving MTA (Gmail, Microsoft 365, Postfix with
OpenDMARC, ...) has already done all three, at the right time, and written the result into
an `Authentication-Results` header. What we must decide is which of those headers to believe:

- with trusted authserv-ids configured (`REPLYGUARD_AUTHSERV_ID`, e.g. `mx.google.com`): every
  header that carries one of them, and no other. RFC 8601 section 5 requires a receiving MTA
  to delete headers that claim its own id from incoming mail, so these cannot be forged.
- without: the topmost header only. The receiving side adds its header on top of whatever the
  sender wrote, so a header forged by the sender sits below it. If the receiving side adds
  none, the sender's own header is the topmost one: that is why the verdict is only ever used
  to be MORE careful (a `fail` holds things for a person); a `pass` grants nothing that a
  message without any header would not get.

The verdict is about the domain of the From address, the identity a person reads:
`fail` when DMARC fails for it, or, without a DMARC result, when an aligned DKIM signature or
SPF check fails and none passes; `pass` when DMARC passes or an aligned DKIM or SPF check
passes; `none` otherwise (no trusted header, no result for that domain, temporary errors).

This is a tolerant reader, not a validator: real headers break the grammar (Microsoft 365
writes no authserv-id; values carry comments and quotes), and a reader that refuses them
would record nothing. authres, the maintained parser, rejects Exchange Online's header
outright, hence this one.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from replyguard.domain.addresses import strip_comments

#: Only the first few headers and results are read: a real message has one or two headers.
_MAX_HEADERS = 10
_MAX_RESULTS = 30
_MAX_CHARS = 8000
_RESULT = re.compile(r"^([a-z0-9_-]+)(?:/\d+)?=([a-z0-9_-]+)$", re.IGNORECASE)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")  # never stored
_PROPERTY = re.compile(r"^([a-z0-9_-]+)\.([a-z0-9_-]+)=(.*)$", re.IGNORECASE)


class Verdict(enum.StrEnum):
    PASS = "pass"  # noqa: S105 - a verdict, not a password
    FAIL = "fail"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class AuthResult:
    """One `method=result` with its properties (`header.d` -> `x.test`)."""

    method: str
    result: str
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AuthVerdict:
    verdict: Verdict
    domain: str  # the From domain that was judged
    authserv_id: str | None = None  # whose header was believed ("" when it named none)
    dmarc: str | None = None
    dkim: str | None = None
    spf: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "domain": self.domain,
            "authserv_id": self.authserv_id,
            "dmarc": self.dmarc,
            "dkim": self.dkim,
            "spf": self.spf,
        }


def parse_header(value: str) -> tuple[str | None, list[AuthResult]]:
    """(authserv-id or None, results) of one Authentication-Results value; never raises."""
    text = strip_comments(_CONTROL.sub(" ", value[:_MAX_CHARS]))
    segments = [s.strip() for s in _split_semicolons(text)]
    if not segments:
        return None, []
    authserv_id: str | None = None
    first = segments[0].split()
    if first and "=" not in first[0]:
        authserv_id = first[0].lower()
        segments = segments[1:]
    results = []
    for segment in segments[:_MAX_RESULTS]:
        found = _result(segment)
        if found is not None:
            results.append(found)
    return authserv_id, results


def judge(headers: Sequence[str], from_domain: str, trusted_ids: Collection[str] = ()) -> AuthVerdict:
    """The verdict for `from_domain` from a message's Authentication-Results headers, topmost
    first (see the module docstring for which headers are believed)."""
    domain = from_domain.lower().strip(".")
    believed: list[AuthResult] = []
    believed_id: str | None = None
    trusted = {t.lower() for t in trusted_ids}
    for index, value in enumerate(headers[:_MAX_HEADERS]):
        authserv_id, results = parse_header(value)
        if (authserv_id in trusted) if trusted else index == 0:
            believed += results
            believed_id = authserv_id or ""
    if not domain or not believed:
        return AuthVerdict(Verdict.NONE, domain, believed_id)
    dmarc = _first(believed, "dmarc", lambda r: _dmarc_about(r, domain))
    dkim = _first(believed, "dkim", lambda r: aligned(_dkim_domain(r), domain), prefer="pass")
    spf = _first(believed, "spf", lambda r: aligned(_spf_domain(r), domain), prefer="pass")
    verdict = _verdict(dmarc, dkim, spf)
    return AuthVerdict(verdict, domain, believed_id, dmarc, dkim, spf)


def _verdict(dmarc: str | None, dkim: str | None, spf: str | None) -> Verdict:
    if dmarc in ("pass", "bestguesspass"):
        return Verdict.PASS
    if dmarc == "fail":
        return Verdict.FAIL
    if "pass" in (dkim, spf):
        return Verdict.PASS
    if "fail" in (dkim, spf):
        return Verdict.FAIL
    return Verdict.NONE


def _first(results: list[AuthResult], method: str, about: Any, prefer: str | None = None) -> str | None:
    found = [r.result for r in results if r.method == method and about(r)]
    if prefer in found:
        return prefer
    return found[0] if found else None


def _dmarc_about(result: AuthResult, domain: str) -> bool:
    named = result.properties.get("header.from", "").lower().strip(".")
    return not named or named == domain


def _dkim_domain(result: AuthResult) -> str:
    if "header.d" in result.properties:
        return result.properties["header.d"]
    return result.properties.get("header.i", "").rpartition("@")[2]


def _spf_domain(result: AuthResult) -> str:
    return result.properties.get("smtp.mailfrom", "").rpartition("@")[2]


def aligned(signer: str, domain: str) -> bool:
    """Relaxed alignment (RFC 7489 3.1) without the public suffix list: the same domain, or
    one inside the other. A one-label signer (`com`) never aligns."""
    signer = signer.lower().strip(".")
    if "." not in signer:
        return False
    return signer == domain or domain.endswith("." + signer) or signer.endswith("." + domain)


def _result(segment: str) -> AuthResult | None:
    tokens = segment.split()
    if not tokens:
        return None
    head = _RESULT.match(tokens[0])
    if head is None:
        return None
    properties: dict[str, str] = {}
    for token in tokens[1:]:
        prop = _PROPERTY.match(token)
        if prop is not None:
            name = f"{prop.group(1).lower()}.{prop.group(2).lower()}"
            properties.setdefault(name, prop.group(3).strip('"'))
    return AuthResult(head.group(1).lower(), head.group(2).lower(), properties)


def _split_semicolons(text: str) -> list[str]:
    """Split at `;` outside quoted strings (a reason="a; b" is one value)."""
    parts: list[str] = []
    current: list[str] = []
    quoted = False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif ch == ";" and not quoted:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [p for p in parts if p.strip()]
