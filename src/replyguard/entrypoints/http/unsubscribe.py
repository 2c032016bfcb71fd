"""`/u/{token}`: RFC 8058 one-click unsubscribe.

POST with `List-Unsubscribe=One-Click` unsubscribes. GET only shows a page whose button
POSTs: link scanners and mail previews fetch GETs, and must never unsubscribe anybody. An
unknown or forged token is a bare 404, the same for every reason.
"""

from __future__ import annotations

import html
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import HTMLResponse
from starlette.requests import Request

from replyguard.bootstrap import App
from replyguard.entrypoints.http.forms import BadForm, read_limited
from replyguard.service_layer.unsubscribe import UnknownToken, check_token, one_click_unsubscribe

ONE_CLICK = b"List-Unsubscribe=One-Click"
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
    def unsubscribe(token: str, body: Annotated[bytes, Depends(_body)]) -> HTMLResponse:
        if ONE_CLICK not in body.split(b"&"):
            raise BadForm("not a one-click unsubscribe request")
        try:
            result = one_click_unsubscribe(app, token)
        except UnknownToken:
            raise HTTPException(404) from None
        note = "You were already unsubscribed." if result.already else "You will get no more email from us."
        return page("Unsubscribed", f"<p>{html.escape(note)}</p>")

    return routes
