"""The authentication verdict: real Authentication-Results shapes, and whose header we believe."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replyguard.domain.authentication import Verdict, judge, parse_header

GMAIL = (
    "mx.google.com;\r\n       dkim=pass header.i=@fernhollow.test header.s=s1 header.b=Xy12;\r\n"
    "       spf=pass (google.com: domain of priya@fernhollow.test designates 192.0.2.1 as permitted "
    "sender) smtp.mailfrom=priya@fernhollow.test;\r\n       dmarc=pass (p=REJECT sp=REJECT dis=NONE) "
    "header.from=fernhollow.test"
)
# Exchange Online writes no authserv-id at all, which RFC 8601 requires: a strict parser refuses it.
MICROSOFT = (
    "spf=pass (sender IP is 40.107.1.1) smtp.mailfrom=fernhollow.test; dkim=pass (signature was "
    "verified) header.d=fernhollow.test;dmarc=pass action=none header.from=fernhollow.test;"
    "compauth=pass reason=100"
)
MICROSOFT_FAIL = (
    "spf=fail (sender IP is 203.0.113.9) smtp.mailfrom=fernhollow.test; dkim=none (message not signed) "
    "header.d=none;dmarc=fail action=quarantine header.from=fernhollow.test;compauth=fail reason=000"
)
OPENDMARC_FAIL = "mail.northwind.test; dmarc=fail (p=none dis=none) header.from=fernhollow.test"
FORGED_PASS = "mail.northwind.test; dmarc=pass header.from=fernhollow.test"


def test_gmail_header_is_read() -> None:
    authserv_id, results = parse_header(GMAIL)
    assert authserv_id == "mx.google.com"
    assert [(r.method, r.result) for r in results] == [("dkim", "pass"), ("spf", "pass"), ("dmarc", "pass")]
    assert results[0].properties["header.i"] == "@fernhollow.test"
    assert judge([GMAIL], "fernhollow.test").verdict is Verdict.PASS


@pytest.mark.parametrize(("value", "verdict"), [(MICROSOFT, Verdict.PASS), (MICROSOFT_FAIL, Verdict.FAIL)])
def test_exchange_online_without_an_authserv_id_is_read(value: str, verdict: Verdict) -> None:
    authserv_id, results = parse_header(value)
    assert authserv_id is None and {r.method for r in results} >= {"spf", "dkim", "dmarc"}
    assert judge([value], "fernhollow.test").verdict is verdict


@pytest.mark.parametrize(
    ("value", "domain", "verdict"),
    [
        ("mx.test; dmarc=fail header.from=fernhollow.test", "fernhollow.test", Verdict.FAIL),
        ("mx.test; dmarc=bestguesspass header.from=fernhollow.test", "fernhollow.test", Verdict.PASS),
        # DMARC about another domain says nothing about this From.
        ("mx.test; dmarc=fail header.from=other.test", "fernhollow.test", Verdict.NONE),
        # Without DMARC: an aligned DKIM or SPF pass is enough, a subdomain aligns (relaxed).
        ("mx.test; dkim=pass header.d=mail.fernhollow.test", "fernhollow.test", Verdict.PASS),
        ("mx.test; spf=pass smtp.mailfrom=bounce@fernhollow.test", "fernhollow.test", Verdict.PASS),
        # A signature of someone else's domain (a mailing service) is not about this From.
        ("mx.test; dkim=pass header.d=sendgrid.test", "fernhollow.test", Verdict.NONE),
        ("mx.test; dkim=pass header.d=test", "fernhollow.test", Verdict.NONE),  # one label never aligns
        ("mx.test; dkim=fail header.d=fernhollow.test", "fernhollow.test", Verdict.FAIL),
        (
            "mx.test; dkim=fail header.d=fernhollow.test; spf=pass smtp.mailfrom=fernhollow.test",
            "fernhollow.test",
            Verdict.PASS,
        ),
        ("mx.test; spf=softfail smtp.mailfrom=fernhollow.test", "fernhollow.test", Verdict.NONE),
        ("mx.test; dmarc=temperror header.from=fernhollow.test", "fernhollow.test", Verdict.NONE),
        ("mx.test; none", "fernhollow.test", Verdict.NONE),
        (
            'mx.test; dkim=fail reason="bad; signature" header.d=fernhollow.test',
            "fernhollow.test",
            Verdict.FAIL,
        ),
        ("mx.test; dmarc=pass header.from=fernhollow.test", "", Verdict.NONE),
    ],
)
def test_verdict_rules(value: str, domain: str, verdict: Verdict) -> None:
    assert judge([value], domain).verdict is verdict


def test_without_configuration_only_the_topmost_header_is_believed() -> None:
    # The receiving side adds its header on top; the sender's forgery sits below it.
    assert judge([OPENDMARC_FAIL, FORGED_PASS], "fernhollow.test").verdict is Verdict.FAIL
    assert judge([FORGED_PASS, OPENDMARC_FAIL], "fernhollow.test").verdict is Verdict.PASS


def test_with_a_configured_authserv_id_only_its_headers_are_believed() -> None:
    forged = "mx.google.com; dmarc=pass header.from=fernhollow.test"  # claims someone else's id
    ours = "mail.northwind.test; dmarc=fail header.from=fernhollow.test"
    verdict = judge([forged, ours], "fernhollow.test", ["MAIL.northwind.test"])
    assert (verdict.verdict, verdict.authserv_id) == (Verdict.FAIL, "mail.northwind.test")
    assert judge([MICROSOFT], "fernhollow.test", ["mail.northwind.test"]).verdict is Verdict.NONE
    assert judge([forged], "fernhollow.test", ["mail.northwind.test"]).verdict is Verdict.NONE


def test_the_verdict_is_stored_as_json() -> None:
    found = judge([GMAIL], "FernHollow.test").to_json()
    assert found == {
        "verdict": "pass",
        "domain": "fernhollow.test",
        "authserv_id": "mx.google.com",
        "dmarc": "pass",
        "dkim": "pass",
        "spf": "pass",
    }


@given(st.lists(st.text(max_size=300), max_size=4), st.text(max_size=40))
def test_any_header_text_gives_a_verdict_and_never_raises(values: list[str], domain: str) -> None:
    assert judge(values, domain).verdict in set(Verdict)
