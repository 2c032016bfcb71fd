"""Helpers of the web tests: a real uvicorn on a loopback port, workspaces with a user and a
token, signing in through the real form, and the form token of a page."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
import uvicorn
from fastapi import FastAPI

from replyguard.bootstrap import App
from replyguard.domain.access import Level, Principal
from replyguard.service_layer.workspace.accounts import add_user
from replyguard.service_layer.workspace.api_tokens import create_token

PASSWORD = "correct horse battery staple"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
_LOGIN = re.compile(r'name="login_token" value="([^"]+)"')


@contextmanager
def serving(api: FastAPI, log_level: str = "warning") -> Iterator[str]:
    """The app under a real uvicorn on a free loopback port; yields its base URL."""
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as `replyguard up` does
    sock.bind(("127.0.0.1", 0))
    # log_config=None: uvicorn logs through the root logger, where pytest (caplog) sees them.
    # proxy_headers off, as `serve` and `up` run it: the app alone decides which forwarded
    # addresses to believe (REPLYGUARD_TRUSTED_PROXIES).
    config = uvicorn.Config(api, log_level=log_level, log_config=None, lifespan="off", proxy_headers=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            thread.join(0.01)
            assert thread.is_alive(), "uvicorn did not start"
        host, port = sock.getsockname()
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@dataclass(frozen=True)
class Tenant:
    """A workspace with one user and one API token."""

    app: App
    workspace_id: int
    email: str
    token: str


def tenant(base: App, workspace: str, email: str) -> Tenant:
    """The workspace `workspace` in `base`'s database (created if missing), a user, a token."""
    app = (
        base
        if workspace == base.workspace
        else App(base.engine, base.clock, base.settings, workspace=workspace)
    )
    workspace_id = app.init_database() if app is not base else base.workspace_id
    with app.uow() as uow:
        add_user(uow, email, PASSWORD, name=email.split("@", maxsplit=1)[0].title())
        _view, token = create_token(uow, f"tests {workspace}", Principal.operator("tests"), scope=Level.ADMIN)
        uow.commit()
    return Tenant(app, workspace_id, email, token)


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found, "no form token on the page"
    return found.group(1)


def sign_in(client: httpx.Client, email: str, password: str = PASSWORD) -> httpx.Response:
    """Through the real form: the sign-in page sets its token cookie, the post carries both."""
    page = client.get("/login")
    token = _LOGIN.search(page.text)
    assert token, "no sign-in form"
    return client.post(
        "/login", data={"email": email, "password": password, "login_token": token.group(1), "next": "/"}
    )


@contextmanager
def signed_in(base: str, email: str) -> Iterator[tuple[httpx.Client, str]]:
    """A client with a live session, and the session's form token."""
    with httpx.Client(base_url=base, timeout=120) as client:
        response = sign_in(client, email)
        assert response.status_code == 303, response.text
        yield client, csrf_of(client.get("/campaigns").text)


def api_client(base: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=120, headers={"Authorization": f"Bearer {token}"})
