"""A local OAuth2 authorization server on loopback, built from Authlib's server parts: the
stand-in for Google's and Microsoft's in the OAuth2 tests.

`AuthorizationServer` speaks what the product uses of a provider: the authorization endpoint
(code flow, PKCE S256 required, approving at once as `approve_as`: the person who "signs in"),
the token endpoint (authorization_code and refresh_token grants, client_secret_basic or
_post), and RFC 7662 introspection for the resource servers (the private Dovecot's oauth2
passdb and the XOAUTH2 aiosmtpd server, each a client of their own). `revoke(email)` is the
person removing the app's access in their account: every token of theirs stops working at
once, the refresh token included (a refresh then answers `invalid_grant`, as Google does).

It runs in a thread of the test process (`http.server`), one request per thread.
`XOAuth2SmtpServer` is the aiosmtpd server of the same tests: it offers AUTH XOAUTH2 and
checks each token at the authorization server's introspection endpoint, as Dovecot does.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

from aiosmtpd.smtp import SMTP, AuthResult
from authlib.oauth2 import rfc6749
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload, OAuth2Request
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint

from tests.support.smtp_servers import SmtpTestServer, _Handler

CLIENT_ID = "replyguard-test"
CLIENT_SECRET = "loopback-client-secret"
RESOURCE_ID = "mail-servers"  # Dovecot and the SMTP server introspect tokens as this client
RESOURCE_SECRET = "loopback-resource-secret"


@dataclass
class Client(rfc6749.ClientMixin):
    client_id: str
    secret: str = field(repr=False)  # the server side logs its clients at DEBUG
    redirect_uris: tuple[str, ...] = ()

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if self.redirect_uris else None

    def get_allowed_scope(self, scope: str) -> str:
        return scope

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris

    def check_client_secret(self, client_secret: str) -> bool:
        return secrets.compare_digest(client_secret, self.secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code" and bool(self.redirect_uris)

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in ("authorization_code", "refresh_token") and bool(self.redirect_uris)


@dataclass
class Code(rfc6749.AuthorizationCodeMixin):
    code: str = field(repr=False)
    client_id: str
    redirect_uri: str
    scope: str
    user: str
    code_challenge: str | None
    code_challenge_method: str | None

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass
class Token(rfc6749.TokenMixin):
    client_id: str
    user: str
    scope: str
    access_token: str = field(repr=False)
    refresh_token: str | None = field(repr=False)
    issued_at: float
    expires_in: int
    revoked: bool = False
    refresh_used: bool = False  # rotated away (Microsoft): the refresh token works no more

    def check_client(self, client: Any) -> bool:
        return bool(client.get_client_id() == self.client_id)

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return self.expires_in

    def is_expired(self) -> bool:
        return time.time() >= self.issued_at + self.expires_in

    def is_revoked(self) -> bool:
        return self.revoked

    def get_user(self) -> str:
        return self.user

    def get_client(self) -> Any:
        return self.client_id


class _Payload(BasicOAuth2Payload):
    def __init__(self, values: list[tuple[str, str]]) -> None:
        super().__init__(dict(values))
        listed: dict[str, list[str]] = defaultdict(list)
        for key, value in values:
            listed[key].append(value)
        self._datalist = listed


class _Request(OAuth2Request):
    def __init__(self, method: str, uri: str, headers: dict[str, str], form: list[tuple[str, str]]) -> None:
        super().__init__(method, uri, headers=headers)
        query = parse_qsl(urlsplit(uri).query)
        self._args = dict(query)
        self._form = dict(form)
        self.payload = _Payload(query + form)

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _Server(rfc6749.AuthorizationServer):
    def __init__(self, owner: AuthorizationServer) -> None:
        super().__init__(scopes_supported=None)
        self.owner = owner

    def query_client(self, client_id: str) -> Client | None:
        return self.owner.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        self.owner.save_token(token, request)

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        assert isinstance(request, OAuth2Request)
        return request

    def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, Any]:
        return status, body, headers

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass


class _CodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        owner: AuthorizationServer = self.server.owner
        owner.codes[code] = Code(
            code,
            request.payload.client_id,
            request.payload.redirect_uri,
            request.payload.scope or "",
            request.user,
            request.payload.data.get("code_challenge"),
            request.payload.data.get("code_challenge_method"),
        )

    def query_authorization_code(self, code: str, client: Client) -> Code | None:
        found: Code | None = self.server.owner.codes.get(code)
        return found if found is not None and found.client_id == client.client_id else None

    def delete_authorization_code(self, authorization_code: Code) -> None:
        self.server.owner.codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code: Code) -> str:
        return authorization_code.user


class _RefreshGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]
    INCLUDE_NEW_REFRESH_TOKEN = False  # as Google: the refresh token stays the same

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        owner: AuthorizationServer = self.server.owner
        with owner.lock:
            owner.refreshes += 1
            for token in owner.tokens:
                if token.refresh_token == refresh_token and not token.revoked and not token.refresh_used:
                    return token
        return None

    def authenticate_user(self, refresh_token: Token) -> str:
        return refresh_token.user

    def revoke_old_credential(self, refresh_token: Token) -> None:
        pass  # the refresh token lives on (INCLUDE_NEW_REFRESH_TOKEN is False)


class _RotatingRefreshGrant(_RefreshGrant):
    """As Microsoft: each refresh gives a new refresh token, and the old one works no more."""

    INCLUDE_NEW_REFRESH_TOKEN = True

    def revoke_old_credential(self, refresh_token: Token) -> None:
        with self.server.owner.lock:
            refresh_token.refresh_used = True


class _Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        owner: AuthorizationServer = self.server.owner
        with owner.lock:
            owner.introspections += 1
            return next((t for t in owner.tokens if token_string in (t.access_token, t.refresh_token)), None)

    def introspect_token(self, token: Token) -> dict[str, Any]:
        return {
            "active": True,
            "client_id": token.client_id,
            "token_type": "Bearer",
            "username": token.user,
            "scope": token.scope,
            "sub": token.user,
            "exp": int(token.issued_at + token.expires_in),
            "iat": int(token.issued_at),
        }

    def check_permission(self, token: Token, client: Client, request: OAuth2Request) -> bool:
        return client.client_id == RESOURCE_ID


@dataclass
class AuthorizationServer:
    """`redirect_uris`: where the replyguard client may be sent back to. `expires_in`: the
    lifetime of each access token, in seconds. `rotate_refresh_tokens`: each refresh gives a
    new refresh token and retires the old one (Microsoft's way; Google keeps one)."""

    redirect_uris: tuple[str, ...]
    expires_in: int = 3600
    approve_as: str = "dana@example.com"
    rotate_refresh_tokens: bool = False
    clients: dict[str, Client] = field(default_factory=dict)
    codes: dict[str, Code] = field(default_factory=dict)
    tokens: list[Token] = field(default_factory=list)
    refreshes: int = 0
    introspections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _http: ThreadingHTTPServer | None = None

    def __post_init__(self) -> None:
        self.clients[CLIENT_ID] = Client(CLIENT_ID, CLIENT_SECRET, self.redirect_uris)
        self.clients[RESOURCE_ID] = Client(RESOURCE_ID, RESOURCE_SECRET)
        server = _Server(self)
        server.register_grant(_CodeGrant, [CodeChallenge(required=True)])
        server.register_grant(_RotatingRefreshGrant if self.rotate_refresh_tokens else _RefreshGrant)
        server.register_endpoint(_Introspection)
        server.register_token_generator(
            "default",
            BearerTokenGenerator(
                access_token_generator=lambda **_: secrets.token_urlsafe(24),
                refresh_token_generator=lambda **_: secrets.token_urlsafe(32),
                expires_generator=lambda *_: self.expires_in,
            ),
        )
        self.server = server

    # -- what a test does ------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._http is not None, "not started"
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def introspection_url(self) -> str:
        """For a resource server: the endpoint with its client's credentials in it."""
        return self.url.replace("http://", f"http://{RESOURCE_ID}:{RESOURCE_SECRET}@") + "/introspect"

    def revoke(self, user: str) -> int:
        """The person takes the app's access away: every token of theirs stops working."""
        with self.lock:
            found = [t for t in self.tokens if t.user == user and not t.revoked]
            for token in found:
                token.revoked = True
        return len(found)

    def active(self, access_token: str) -> bool:
        with self.lock:
            return any(
                t.access_token == access_token and not t.revoked and not t.is_expired() for t in self.tokens
            )

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        refresh = token.get("refresh_token")
        if refresh is None and request.refresh_token is not None:
            refresh = request.refresh_token.refresh_token
        with self.lock:
            self.tokens.append(
                Token(
                    request.client.client_id,
                    request.user,
                    token.get("scope", ""),
                    token["access_token"],
                    refresh,
                    time.time(),
                    int(token["expires_in"]),
                )
            )

    # -- HTTP ------------------------------------------------------------------------
    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any, Any]:
        form = parse_qsl(body.decode("utf-8")) if body else []
        request = _Request(method, self.url + path, headers, form)
        route = urlsplit(path).path
        if route == "/authorize":
            try:
                grant = self.server.get_consent_grant(request, end_user=self.approve_as)
            except rfc6749.OAuth2Error as error:
                return self.server.handle_error_response(request, error)  # type: ignore[no-any-return]
            return self.server.create_authorization_response(request, grant_user=self.approve_as, grant=grant)  # type: ignore[no-any-return]
        if route == "/token":
            return self.server.create_token_response(request)  # type: ignore[no-any-return]
        if route == "/introspect":
            return self.server.create_endpoint_response("introspection", request)  # type: ignore[no-any-return]
        return 404, {"error": "not_found"}, [("Content-Type", "application/json")]

    def start(self) -> Self:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, payload, headers = owner.handle(self.command, self.path, dict(self.headers), body)
                data = (
                    payload
                    if isinstance(payload, bytes)
                    else json.dumps(payload).encode()
                    if payload
                    else b""
                )
                self.send_response(status)
                for name, value in headers or []:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._http.serve_forever, name="oauth server", daemon=True).start()
        return self

    def stop(self) -> None:
        http, self._http = self._http, None
        if http is not None:
            http.shutdown()
            http.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def xoauth2_user_token(initial: bytes) -> tuple[str, str]:
    """The user and the bearer token of an XOAUTH2 initial response (base64 of
    `user=U^Aauth=Bearer T^A^A`); ValueError for anything else."""
    text = base64.b64decode(initial, validate=True).decode("utf-8")
    fields = dict(part.split("=", 1) for part in text.split("\x01") if part)
    scheme, _, token = fields["auth"].partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise ValueError("not a bearer token")
    return fields["user"], token


class _XOAuth2Handler(_Handler):
    owner: XOAuth2SmtpServer

    async def auth_XOAUTH2(self, server: SMTP, args: list[str]) -> AuthResult:
        if len(args) < 2:  # no initial response: ask for it
            answer = await server.challenge_auth("", encode_to_b64=False)
            initial = answer if isinstance(answer, bytes) else b""
        else:
            initial = args[1].encode("ascii")
        try:
            user, token = xoauth2_user_token(initial)
        except (ValueError, KeyError):
            return AuthResult(success=False, handled=False)
        ok = await asyncio.to_thread(self.owner.token_of, user, token)
        with self.owner._lock:
            self.owner.xoauth2_logins.append((user, ok))
        return AuthResult(success=ok, handled=False, auth_data=user)


class XOAuth2SmtpServer(SmtpTestServer):
    """A loopback SMTP server that takes AUTH XOAUTH2 only: a token is good when the
    authorization server's introspection says it is active and is `user`'s."""

    def __init__(self, authorization: AuthorizationServer, **kwargs: Any) -> None:
        # `auth` makes MAIL FROM require a login; no password opens it (PLAIN always fails).
        super().__init__(auth=("nobody", secrets.token_hex(16)), **kwargs)
        self.authorization = authorization
        self.xoauth2_logins: list[tuple[str, bool]] = []

    def make_handler(self) -> _Handler:
        return _XOAuth2Handler(self)

    def token_of(self, user: str, token: str) -> bool:
        import httpx

        answer = httpx.post(self.authorization.introspection_url, data={"token": token}, timeout=10).json()
        return bool(answer.get("active")) and answer.get("username") == user
