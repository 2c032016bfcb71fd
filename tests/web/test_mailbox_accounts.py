"""Connected mailboxes on the web: the API and the Mailboxes page connect a mailbox to its own
SMTP server, test its login against a real aiosmtpd (nothing sent) and forget it; without a
key a password is refused; the password is in no answer, page or error (issue 24, items 1, 2)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from replyguard.adapters.secret_box import new_key
from tests.support.smtp_servers import RecordingSmtpServer
from tests.support.tls import CertPair, TlsUnavailable, self_signed_cert
from tests.web.conftest import Site
from tests.web.support import api_client, signed_in

PASSWORD = "web-only Pa55word!"
ADDRESS = "dana@alpha.test"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertPair:
    try:
        return self_signed_cert(tmp_path_factory.mktemp("tls"))
    except TlsUnavailable as exc:
        pytest.skip(f"no TLS in this environment: {exc}")


@pytest.fixture
def smtp(certs: CertPair) -> Iterator[RecordingSmtpServer]:
    with RecordingSmtpServer(auth=(ADDRESS, PASSWORD), tls=certs) as server:
        yield server


def test_the_api_connects_tests_and_removes_a_mailbox(
    site: Site, smtp: RecordingSmtpServer, certs: CertPair
) -> None:
    body = {
        "address": ADDRESS,
        "smtp": f"smtp+starttls://127.0.0.1:{smtp.port}?cafile={certs.cert}",
        "password": PASSWORD,
    }
    with api_client(site.base, site.alpha.token) as api:
        refused = api.post("/api/v1/mailboxes", json=body)
        assert refused.status_code == 409 and "REPLYGUARD_SECRET_KEY" in refused.json()["detail"]
        assert PASSWORD not in refused.text and api.get("/api/v1/mailboxes").json() == []

        site.alpha.app.secret_keys = (new_key(),)
        created = api.post("/api/v1/mailboxes", json=body)
        assert created.status_code == 201, created.text
        shown = created.json()
        assert shown["password_stored"] is True and shown["smtp"].startswith(
            "smtp+starttls://dana%40alpha.test@"
        )
        assert PASSWORD not in created.text and PASSWORD not in api.get("/api/v1/mailboxes").text

        tested = api.post(f"/api/v1/mailboxes/{shown['id']}/test")
        assert tested.status_code == 200, tested.text
        result = tested.json()
        assert result["ok"] is True and result["checks"][0]["what"] == "sending (SMTP)"
        assert f"logged in as {ADDRESS}" in result["checks"][0]["words"]
        assert smtp.accepted() == [] and smtp.data_commands == 0  # nothing sent

        # A request the API refuses echoes its input, never the password in it.
        bad = api.post("/api/v1/mailboxes", json={"password": PASSWORD, "daily_cap": "many"})
        assert bad.status_code == 422 and PASSWORD not in bad.text
        worse = api.post("/api/v1/mailboxes", json={"address": ADDRESS, "password": [PASSWORD]})
        assert worse.status_code == 422 and PASSWORD not in worse.text

    with api_client(site.base, site.bravo.token) as other:  # another workspace sees nothing of it
        assert other.get("/api/v1/mailboxes").json() == []
        assert other.post(f"/api/v1/mailboxes/{shown['id']}/test").status_code == 404
        assert other.delete(f"/api/v1/mailboxes/{shown['id']}").status_code == 404

    with api_client(site.base, site.alpha.token) as api:
        removed = api.delete(f"/api/v1/mailboxes/{shown['id']}")
        assert removed.json() == {"mailbox_id": shown["id"], "result": "removed"}
        assert api.get("/api/v1/mailboxes").json() == []


def test_the_page_connects_and_tests_a_mailbox(
    site: Site, smtp: RecordingSmtpServer, certs: CertPair
) -> None:
    url = f"smtp+starttls://127.0.0.1:{smtp.port}?cafile={certs.cert}"
    with signed_in(site.base, site.alpha.email) as (page, csrf):
        form = {"csrf_token": csrf, "address": ADDRESS, "smtp": url, "password": PASSWORD}
        first = page.get("/mailboxes")
        assert 'id="no-secret-key"' in first.text
        refused = page.post("/mailboxes", data=form)
        assert refused.status_code == 400 and "no secret key is configured" in refused.text
        assert PASSWORD not in refused.text and url.replace("&", "&amp;") in refused.text  # kept, but not it

        site.alpha.app.secret_keys = (new_key(),)
        connected = page.post("/mailboxes", data=form)
        assert connected.status_code == 303
        listed = page.get("/mailboxes")
        assert "password stored (encrypted)" in listed.text and PASSWORD not in listed.text
        with api_client(site.base, site.alpha.token) as api:
            [mailbox_id] = [mb["id"] for mb in api.get("/api/v1/mailboxes").json()]
        tested = page.post(f"/mailboxes/{mailbox_id}/test", data={"csrf_token": csrf})
        assert (
            tested.status_code == 200 and 'data-ok="yes"' in tested.text and 'data-ok="no"' not in tested.text
        )
        assert f"logged in as {ADDRESS}" in tested.text and PASSWORD not in tested.text

        smtp.auth = (ADDRESS, "changed at the provider")
        failing = page.post(f"/mailboxes/{mailbox_id}/test", data={"csrf_token": csrf})
        assert 'data-ok="no"' in failing.text and "refused the login" in failing.text
        removed = page.post(f"/mailboxes/{mailbox_id}/remove", data={"csrf_token": csrf})
        assert (
            removed.status_code == 303
            and ADDRESS not in page.get("/mailboxes").text.split('id="mailboxes"')[1]
        )
