"""Property-based requests against the OpenAPI schema of /api/v1 (schemathesis): whatever a
client sends, valid or not, the API answers without a server error. Against the real app
under uvicorn with a populated workspace, on SQLite and PostgreSQL.

Each operation's strategy is driven by Hypothesis here directly (schemathesis' pytest loader
for fixtures does not run under pytest 9)."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings

from replyguard.service_layer.audit.config import Setup
from replyguard.service_layer.audit.run import config_audit
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.settings import NotifySettings
from tests.support.scenario import load_examples
from tests.web.conftest import Site
from tests.web.rescue import ADA, GRACE, live_workspace

UNMATCHED = (
    b"From: Someone <someone@elsewhere.test>\r\nTo: dana@northwind-analytics.test\r\nSubject: Hello\r\n"
    b"Message-ID: <fuzz-1@elsewhere.test>\r\nContent-Type: text/html\r\n\r\n<p>Hi <b>there</b></p>\r\n"
)
EXAMPLES_PER_OPERATION = 15


def test_no_request_makes_the_api_fail(site: Site) -> None:
    load_examples(site.alpha.app)
    ingest_raw(site.alpha.app, UNMATCHED, "file")
    # Reply Rescue threads (a reply, a probable one), a config audit run, mailboxes.
    live = live_workspace(site.alpha.app)
    live.reply(ADA, "Yes, interested. Thursday?")
    live.reply(GRACE, "What does it cost?")
    config_audit(site.alpha.app, Setup(site.alpha.app.settings, NotifySettings(), None, "maildir:outbox"))
    # Revoking is covered in test_api.py; here it would revoke the fuzzer's own token (ids are
    # small numbers) and leave every later request a 401.
    schema = schemathesis.openapi.from_url(f"{site.base}/openapi.json").exclude(path_regex=r"/revoke$")
    headers = {"Authorization": f"Bearer {site.alpha.token}"}
    tried = []
    for result in schema.get_all_operations():
        operation = result.ok()
        tried.append(operation.label)

        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def no_server_error(case: schemathesis.Case) -> None:
            response = case.call(headers=headers, timeout=60)
            assert response.status_code < 500, (
                f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}"
            )
            assert response.status_code != 401, "the fuzzer's token stopped working"

        no_server_error()
    assert len(tried) >= 32, tried
