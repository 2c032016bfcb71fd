"""`/u/{token}`: RFC 8058 one-click unsubscribe.

POST with `List-Unsubscribe=One-Click` unsubscribes. GET only shows a page whose button
POSTs: link scanners and mail previews fetch GETs, and must never unsubscribe anybody. An
unknown or forged token is a bare 404, the same for every reason.

RFC 8058 3.2: the receiver SHOULD send the pair as `multipart/form-data` and MAY send it
urlencoded; both are read, as is a body with no or another content type (the pair as text).
Surrounding whitespace (a trailing CRLF), percent-encoding and the case of the value are
tolerated: the token is the proof, the body only says "one click".
"""

from __future__ import annotations

import html
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import HTMLResponse
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.entrypoints.http.forms import BadForm, Form, parse_form, parse_urlencoded, read_limited
from replyguard.service_layer.inbound.unsubscribe import UnknownToken, check_token, one_click_unsubscribe

KEY, VALUE = "List-Unsubscribe", "one-click"
_MAX_BODY = 4096
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
}
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: sans-serif; max-width: 32em; margin: 3em auto">
<h1>{title}</h1>{content}</body></html>
"""


async def _body(request: Request) -> bytes:
    return await read_limited(request, _MAX_BODY)


def page(title: str, content: str) -> HTMLResponse:
    return HTMLResponse(_PAGE.format(title=html.escape(title), content=content), headers=_HEADERS)


def router(app: App) -> APIRouter:
    routes = APIRouter()

    @routes.get("/u/{token}")
    def confirm_page(token: str) -> HTMLResponse:
        try:
            check_token(app, token)
        except UnknownToken:
            raise HTTPException(404) from None
        action = html.escape(f"/u/{token}", quote=True)
        return page(
            "Unsubscribe",
            f'<p>Stop all email from us to this address?</p><form method="post" action="{action}">'
            '<input type="hidden" name="List-Unsubscribe" value="One-Click">'
            '<button type="submit">Unsubscribe</button></form>',
        )

    @routes.post("/u/{token}")
    def unsubscribe(request: Request, token: str, body: Annotated[bytes, Depends(_body)]) -> HTMLResponse:
        if not one_click(request.headers.get("content-type", ""), body):
            raise BadForm("not a one-click unsubscribe request")
        try:
            result = one_click_unsubscribe(app, token)
        except UnknownToken:
            raise HTTPException(404) from None
        note = "You were already unsubscribed." if result.already else "You will get no more email from us."
        return page("Unsubscribed", f"<p>{html.escape(note)}</p>")

    return routes


def one_click(content_type: str, body: bytes) -> bool:
    """Whether the body carries `List-Unsubscribe=One-Click` (see the module docstring)."""
    try:
        if content_type.strip().lower().startswith("multipart/form-data"):
            form = parse_form(content_type, [body])
        else:
            form = parse_urlencoded([body.strip()])
    except BadForm:
        return False
    return any(_says_one_click(form, name) for name in form.parts if name.strip() == KEY)


def _says_one_click(form: Form, name: str) -> bool:
    return any(p.data.strip().decode("latin-1").lower() == VALUE for p in form.parts[name])
