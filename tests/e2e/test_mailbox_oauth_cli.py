"""`replyguard mailbox add EMAIL --oauth google`: the paste flow of the command line, in a real
process, against the local authorization server, then `mailbox test` logging in with XOAUTH2
to a private Dovecot and an aiosmtpd server that introspect the token (issue 24, item 3).
No token appears in any output."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from replyguard.adapters.secret_box import new_key
from tests.support.cli import Ran, clean_env, run_cli
from tests.support.imap_server import DovecotServer, dovecot_or_skip
from tests.support.oauth_server import CLIENT_ID, CLIENT_SECRET, AuthorizationServer, XOAuth2SmtpServer
from tests.support.tls import CertPair, TlsUnavailable, self_signed_cert

DANA = "dana@alpha.test"
REDIRECT = "http://127.0.0.1:9/mailboxes/oauth/callback"  # where the browser lands: never opened


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> CertPair:
    try:
        return self_signed_cert(tmp_path_factory.mktemp("tls"))
    except TlsUnavailable as exc:
        pytest.skip(f"no TLS in this environment: {exc}")


@pytest.fixture
def env(tmp_path: Path, certs: CertPair) -> Iterator[tuple[dict[str, str], AuthorizationServer]]:
    with AuthorizationServer((REDIRECT,), approve_as=DANA) as authz:
        dovecot = DovecotServer(
            dovecot_or_skip(), {DANA: "unused"}, oauth2_introspection=authz.introspection_url
        )
        with XOAuth2SmtpServer(authz, tls=certs) as smtp, dovecot:
            yield (
                clean_env(
                    REPLYGUARD_DATABASE_URL=f"sqlite:///{tmp_path / 'rg.db'}",
                    REPLYGUARD_TRANSPORT=f"maildir:{tmp_path / 'outbox'}",
                    REPLYGUARD_SECRET_KEY=new_key(),
                    REPLYGUARD_GOOGLE_CLIENT_ID=CLIENT_ID,
                    REPLYGUARD_GOOGLE_CLIENT_SECRET=CLIENT_SECRET,
                    REPLYGUARD_GOOGLE_AUTHORIZE_URL=f"{authz.url}/authorize",
                    REPLYGUARD_GOOGLE_TOKEN_URL=f"{authz.url}/token",
                    REPLYGUARD_GOOGLE_SMTP_URL=f"smtp+starttls://{{address}}@127.0.0.1:{smtp.port}?cafile={certs.cert}",
                    REPLYGUARD_GOOGLE_IMAP_URL=f"imap://{{address}}@127.0.0.1:{dovecot.port}/INBOX?starttls=no",
                    REPLYGUARD_OAUTH_REDIRECT_URL=REDIRECT,
                    COLUMNS="1000",
                ),
                authz,
            )


def _secrets(authz: AuthorizationServer) -> list[str]:
    return [s for t in authz.tokens for s in (t.access_token, t.refresh_token) if s] + [CLIENT_SECRET]


def _run(args: list[str], env: dict[str, str], cwd: Path) -> Ran:
    ran = run_cli(args, env=env, cwd=cwd)
    assert "Traceback" not in ran.stderr, ran.stderr
    return ran


def test_mailbox_add_oauth_pastes_the_redirect_and_test_logs_in_with_it(
    tmp_path: Path, env: tuple[dict[str, str], AuthorizationServer]
) -> None:
    variables, authz = env
    assert _run(["init"], variables, tmp_path).returncode == 0
    command = [sys.executable, "-c", "from replyguard.entrypoints.cli.app import main; main()"]
    proc = subprocess.Popen(
        [*command, "mailbox", "add", DANA, "--oauth", "google", "--by", "admin@seller.test", "--json"],
        env=variables,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None and proc.stdin is not None
    said = [proc.stderr.readline() for _ in range(2)]
    assert "sign in to Google as dana@alpha.test" in said[0], said
    url = said[1].strip()
    assert url.startswith(f"{authz.url}/authorize?") and "code_challenge_method=S256" in url
    landed = httpx.get(url).headers["location"]  # the person signs in and allows access
    out, rest = proc.communicate(landed + "\n", timeout=120)
    assert proc.returncode == 0, rest
    shown = json.loads(out)
    assert shown["oauth"] == "google" and shown["password_stored"] is False
    assert shown["smtp"].startswith("smtp+starttls://dana%40alpha.test@127.0.0.1:")

    tested = _run(["mailbox", "test", DANA], variables, tmp_path)
    assert tested.returncode == 0, tested
    assert "works  sending (SMTP)" in tested.stdout and "works  reading (IMAP)" in tested.stdout
    listed = _run(["mailbox", "list", "--json"], variables, tmp_path)
    [row] = json.loads(listed.stdout)
    assert row["oauth"] == "google" and row["grant_refused"] is False
    everything = out + rest + tested.stdout + tested.stderr + listed.stdout
    assert not [s for s in _secrets(authz) if s in everything]

    # Pasting something that is not the redirect: one clear line, nothing stored.
    again = _run(["mailbox", "remove", DANA, "--yes"], variables, tmp_path)
    assert again.returncode == 0
    bad = run_cli(
        ["mailbox", "add", DANA, "--oauth", "google"],
        env=variables,
        cwd=tmp_path,
        input=f"{REDIRECT}?error=access_denied\n",
    )
    assert bad.returncode == 2 and "access was not granted" in bad.stderr and "Traceback" not in bad.stderr
    assert json.loads(_run(["mailbox", "list", "--json"], variables, tmp_path).stdout) == []
