"""A private Dovecot IMAP server on loopback, the oracle for the IMAP poller tests.

`DovecotServer` writes its own configuration (plaintext login on 127.0.0.1 only, one
passwd-file user, Maildir mail, IDLE as Dovecot always offers it), starts `dovecot -F` as a
child process in its own session on a random port, and can be stopped and started again on
the same port and mail store to play a server restart. Nothing of the system's Dovecot
(configuration, sockets, service) is used or touched.

Everything lives in a fresh directory under /tmp, not pytest's tmp_path: UNIX socket paths
must stay under 108 bytes, and when the tests run as root Dovecot's unprivileged helpers
(dovenull, dovecot, the mail user nobody) must be able to reach the files.

`oauth2_introspection=URL` adds Dovecot's oauth2 passdb after the passwd-file one: XOAUTH2
and OAUTHBEARER logins are checked by POSTing the token to that RFC 7662 introspection
endpoint (the local authorization server of tests/support/oauth_server.py), and the token's
`username` must be the user logging in.

`dovecot_or_skip()` finds the binary; without it the tests skip with the reason, unless
REPLYGUARD_REQUIRE_IMAP=1 (set by .ci/run), which makes it a failure.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

import pytest
from imapclient import IMAPClient

USER = "rep"
PASSWORD = "loopback-only"


def dovecot_or_skip() -> str:
    found = shutil.which("dovecot") or next(
        (p for p in ("/usr/sbin/dovecot", "/usr/local/sbin/dovecot") if Path(p).exists()), None
    )
    if found:
        return found
    why = "dovecot is not installed (apt-get install dovecot-imapd); the IMAP poller tests need it"
    if os.environ.get("REPLYGUARD_REQUIRE_IMAP") == "1":
        pytest.fail(f"REPLYGUARD_REQUIRE_IMAP=1 but {why}")
    pytest.skip(why)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DovecotServer:
    """`users`: {login: password} (default: the one USER); each has a mail store of its own."""

    def __init__(
        self, binary: str, users: Mapping[str, str] | None = None, *, oauth2_introspection: str | None = None
    ) -> None:
        self.binary = binary
        self.users = dict(users or {USER: PASSWORD})
        self.oauth2_introspection = oauth2_introspection
        self.root = Path(tempfile.mkdtemp(prefix="rg-imap-"))
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._configure()

    @property
    def url(self) -> str:
        return f"imap://{USER}:{PASSWORD}@127.0.0.1:{self.port}/INBOX?starttls=no"

    @property
    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _configure(self) -> None:
        root = self.root
        for name in ("run", "state", "home"):
            (root / name).mkdir()
        if os.geteuid() == 0:
            # Dovecot refuses to run mail sessions as root: they run as nobody.
            root.chmod(0o755)
            mail_uid, login_user, internal_user = 65534, "dovenull", "dovecot"
            os.chown(root / "home", mail_uid, mail_uid)
        else:
            mail_uid = os.getuid()
            login_user = internal_user = pwd.getpwuid(mail_uid).pw_name
        mail_gid = pwd.getpwuid(mail_uid).pw_gid
        (root / "passwd").write_text("".join(f"{u}:{{PLAIN}}{p}::::::\n" for u, p in self.users.items()))
        mechanisms, oauth2_passdb = "plain login", ""
        if self.oauth2_introspection is not None:
            # Dovecot 2.3: the mechanism hands the token to each passdb as the password; the
            # passwd-file one fails it and the oauth2 one introspects it.
            mechanisms = "plain login xoauth2 oauthbearer"
            (root / "oauth2.conf.ext").write_text(
                f"introspection_mode = post\n"
                f"introspection_url = {self.oauth2_introspection}\n"
                "force_introspection = yes\n"
                "username_attribute = username\n"
                "active_attribute = active\n"
                "active_value = true\n"
            )
            oauth2_passdb = (
                f"passdb {{\n  driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n"
                f"  args = {root}/oauth2.conf.ext\n}}\n"
            )
        (root / "dovecot.conf").write_text(
            f"""
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = {mechanisms}
default_login_user = {login_user}
default_internal_user = {internal_user}
first_valid_uid = {min(mail_uid, 500)}
mail_location = maildir:~/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {root}/passwd
}}
{oauth2_passdb}userdb {{
  driver = static
  args = uid={mail_uid} gid={mail_gid} home={root}/home/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
"""
        )

    def start(self, timeout: float = 60.0) -> None:
        assert self.process is None, "already running"
        with (self.root / "stderr.log").open("ab") as stderr:  # the child keeps its own copy
            self.process = subprocess.Popen(
                [self.binary, "-F", "-c", str(self.root / "dovecot.conf")],
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                output = (self.root / "stderr.log").read_text(errors="replace")
                self.process = None
                raise RuntimeError(f"dovecot exited at start:\n{output}\n{self.log}")
            if self._greets():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"dovecot did not answer on port {self.port}:\n{self.log}")

    def _greets(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                return conn.recv(64).startswith(b"* OK")
        except OSError:
            return False

    def stop(self) -> None:
        """Shut the server down as an administrator would (it drops every client)."""
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
        # Dovecot's helpers share the master's session: make sure none outlives it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    def client(self, user: str = USER) -> IMAPClient:
        client = IMAPClient("127.0.0.1", port=self.port, ssl=False, timeout=10)
        client.login(user, self.users[user])
        return client

    def append(self, *messages: bytes, folder: str = "INBOX", user: str = USER) -> None:
        with self.client(user) as client:
            for raw in messages:
                client.append(folder, raw)

    def close(self) -> None:
        if self.process is not None:
            # No graceful shutdown at the end: it costs a second per test and proves nothing.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
