"""Headers every response gets, and a cross-site check on unsafe page requests.

The cross-site check comes before (and in addition to) the form token: a POST to a page
whose `Sec-Fetch-Site` says cross-site, or whose `Origin` is another host, is refused. The
webhooks, one-click unsubscribe and the token-authenticated API are exempt: other sites and
servers are meant to call them.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

EXEMPT_PREFIXES = ("/hooks/", "/u/", "/api/")
_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_BASELINE = {
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"same-origin",
    b"x-frame-options": b"DENY",
    b"cross-origin-opener-policy": b"same-origin",
    b"permissions-policy": b"camera=(), microphone=(), geolocation=(), payment=()",
    # Anything without its own policy (JSON, errors, static files) may do nothing at all.
    b"content-security-policy": b"default-src 'none'; frame-ancestors 'none'",
}


def _cross_site(scope: Scope) -> bool:
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
    if headers.get("sec-fetch-site", "") == "cross-site":
        return True
    origin = headers.get("origin")
    if origin is None:
        return False
    if origin == "null":
        return True
    return bool(urlsplit(origin).netloc.lower() != headers.get("host", "").lower())


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        if scope.get("method") in _UNSAFE and not path.startswith(EXEMPT_PREFIXES) and _cross_site(scope):
            await PlainTextResponse("cross-site request refused", status_code=403)(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in _BASELINE.items() if k not in present]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)
