"""Invariant 7 on the web: a user or a token of workspace A gets 404 for every object of
workspace B, on every route of the app — found by walking `app.routes`, so that a new route
without a scope check fails here until it has one (or is listed below with a reason).

And who may do what: every route declares the capability it needs (domain/access.py), and a
walk of every route as each role (owner, admin, member, readonly) and with a token of each
scope (read, write, admin) gets 403 exactly where the role or scope falls short, and never a
5xx."""

from __future__ import annotations

import re
from dataclasses import dataclass

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from sqlalchemy import func, select

from replyguard.adapters.db import models as m
from replyguard.bootstrap import App
from replyguard.domain.access import LEVELS, Capability, Level, Principal, Role
from replyguard.domain.leads_csv import read_leads
from replyguard.domain.states import StepState
from replyguard.domain.throttle import LoginPolicy
from replyguard.entrypoints.http import create_app
from replyguard.entrypoints.web.security import declared_capability
from replyguard.service_layer.audit.config import Setup
from replyguard.service_layer.audit.run import config_audit
from replyguard.service_layer.inbound.ingest import ingest_raw
from replyguard.service_layer.workspace.accounts import add_user, sign_in
from replyguard.service_layer.workspace.api_tokens import create_token, find_token
from replyguard.service_layer.workspace.campaigns import create_campaign
from replyguard.service_layer.workspace.leads import find_lead, import_leads
from replyguard.service_layer.workspace.web_sessions import open_session
from replyguard.settings import NotifySettings
from tests.support.scenario import campaign_toml, csv_of, enroll_all, reply
from tests.web.conftest import Site
from tests.web.support import PASSWORD, api_client, signed_in

#: Routes that hold no workspace object, each with the reason it is exempt.
EXEMPT = {
    "/hooks/": "webhooks: authenticated by the provider's secret, they write to the server's workspace",
    "/u/{token}": "one-click unsubscribe: the token itself is the signed, workspace-bound proof",
    "/healthz": "process alive: no data",
    "/readyz": "database reachable: no workspace data",
    "/metrics": "operator numbers across workspaces, loopback or metrics token only",
    "/openapi.json": "the schema",
    "/docs": "the schema viewer",
    "/login": "before anyone is known",
    "/logout": "ends the caller's own session",
    "/": "a redirect",
}
SECRETS = (
    "Bravo secret campaign",
    "secret-lead@bravo.test",
    "replied-lead@bravo.test",
    "Bravo inbound secret",
    "tests bravo",
)
#: A well-formed body for the API operations that need one: B's object must be a 404 even
#: to a request that would be carried out in B's own workspace.
BODIES: dict[str, dict[str, object]] = {
    "/api/v1/threads/{thread_id}/decisions": {"action": "stop"},
    "/api/v1/threads/{thread_id}/assign": {"to": "mallory@alpha.test"},
    "/api/v1/threads/{thread_id}/snooze": {"until": "2026-12-30T09:00:00Z"},
    "/api/v1/threads/{thread_id}/send": {"body": "Hello from another workspace"},
    "/api/v1/tokens": {"name": "walked", "scope": "read"},
    "/api/v1/users": {"email": "walked@alpha.test", "role": "member"},
    "/api/v1/users/{user_id}/role": {"role": "member"},
}
#: The same for the pages' forms.
FORMS: dict[str, dict[str, str]] = {
    "/threads/{thread_id}/decide": {"action": "stop"},
    "/threads/{thread_id}/send": {"body": "Hello from another workspace"},
    "/settings/users/{user_id}/role": {"role": "member"},
    "/campaigns/{campaign_id}/archive": {"sure": "1"},
    "/campaigns/{campaign_id}/test-send": {"position": "1"},
}


@dataclass(frozen=True)
class BravoObjects:
    ids: dict[str, int]


def bravo_objects(bravo: App, bravo_token_name: str) -> BravoObjects:
    with bravo.uow() as uow:
        created = create_campaign(
            uow, campaign_toml("Bravo secret campaign", "Bravo product", approval_last=True)
        )
        rows = read_leads(
            csv_of(
                [
                    {"email": "secret-lead@bravo.test", "first_name": "Sam"},
                    {"email": "replied-lead@bravo.test", "first_name": "Kim"},
                ]
            )
        )
        import_leads(uow, "Bravo product", list(rows))
        uow.commit()
    enroll_all(bravo, "Bravo secret campaign")
    raw = (
        b"From: Stranger <stranger@elsewhere.test>\r\nTo: rep@seller.test\r\n"
        b"Subject: Bravo inbound secret\r\nMessage-ID: <bravo-1@elsewhere.test>\r\n\r\n"
        b"<p>Hello</p>\r\n"
    )
    inbound = ingest_raw(bravo, raw, "file")
    # A reply opens a Reply Rescue thread; a config audit records a run.
    thread_id = reply(bravo, "replied-lead@bravo.test", "Bravo product").thread_id
    setup = Setup(bravo.settings, NotifySettings(), None, "maildir:outbox")
    run_id = config_audit(bravo, setup).run_id
    with bravo.uow() as uow:
        lead_id = find_lead(uow, "secret-lead@bravo.test", "Bravo product").id
        token_id = uow.session.scalars(select(m.ApiToken.id).where(m.ApiToken.name == bravo_token_name)).one()
        mailbox_id = uow.session.scalars(select(m.Mailbox.id)).one()
        user = add_user(uow, f"victim@{bravo.workspace}.test", PASSWORD)
        uow.commit()
    session_id = second_session(bravo, user.email)
    assert thread_id is not None
    return BravoObjects(
        {
            "campaign_id": created.campaign_id,
            "lead_id": lead_id,
            "inbound_id": inbound.inbound_id,
            "token_id": token_id,
            "thread_id": thread_id,
            "run_id": run_id,
            "mailbox_id": mailbox_id,
            "user_id": user.id,
            "session_id": session_id,
        }
    )


def second_session(app: App, email: str) -> int:
    """A session of this user besides the one a test signs in with (ending it ends no walk)."""
    with app.scoped.installation(write=True) as uow:
        found = sign_in(uow, email, PASSWORD, "10.1.1.1", LOGIN)
        assert found.user is not None
        open_session(uow, found.user, user_agent="walk")
        uow.commit()
    with app.uow() as uow:
        return (
            uow.session.scalars(
                select(m.WebSession.id)
                .where(m.WebSession.user_id == found.user.id)
                .order_by(m.WebSession.id.desc())
            ).first()
            or 0
        )


LOGIN = LoginPolicy()


def exempt(path: str) -> bool:
    return path in EXEMPT or path.startswith("/hooks/")


def routes(site_app: App) -> list[tuple[str, str]]:
    api = create_app(site_app)
    found = []
    for route in iter_route_contexts(api.routes):
        if not route.methods or route.path is None:
            continue  # mounts: static files, no workspace data
        found += [(method, route.path) for method in sorted(route.methods) if method != "HEAD"]
    return found


def waiting_steps(app: App) -> int:
    with app.uow() as uow:
        return (
            uow.session.scalar(
                select(func.count()).where(
                    m.Step.workspace_id == uow.workspace_id, m.Step.state == StepState.AWAITING_APPROVAL
                )
            )
            or 0
        )


def test_every_route_answers_404_for_another_workspaces_objects(site: Site) -> None:
    objects = bravo_objects(site.bravo.app, "tests bravo")
    waiting_before = waiting_steps(site.bravo.app)
    walked, listed = [], []
    with (
        signed_in(site.base, site.alpha.email) as (page, csrf),
        api_client(site.base, site.alpha.token) as api,
    ):
        for method, path in routes(site.alpha.app):
            if exempt(path):
                continue
            params = re.findall(r"{(\w+)}", path)
            unknown = [p for p in params if p not in objects.ids]
            assert not unknown, (
                f"{method} {path}: no workspace-B object for {unknown}; add one to bravo_objects"
            )
            url = path.format(**objects.ids)
            client = api if path.startswith("/api/") else page
            response = _call(client, method, url, csrf, BODIES.get(path) or FORMS.get(path) or {})
            if params:
                assert response.status_code == 404, f"{method} {url} as workspace A: {response.status_code}"
                walked.append(path)
            else:
                assert not any(s in response.text for s in SECRETS), (
                    f"{method} {path} shows workspace B's data"
                )
                listed.append(path)
    assert len(walked) >= 30 and len(listed) >= 15  # the walk really covered the app
    # Nothing of B changed: its steps still wait, its thread is untouched, its token works.
    assert waiting_steps(site.bravo.app) == waiting_before > 0
    with site.bravo.app.uow() as uow:
        thread = uow.session.get_one(m.RescueThread, objects.ids["thread_id"])
        assert (thread.state, thread.assignee) == ("open", None)
        assert not uow.session.scalars(select(m.PersonSend.id)).all()
    with site.bravo.app.scoped.installation() as uow:
        assert find_token(uow, site.bravo.token) is not None


def test_the_same_routes_answer_for_the_workspaces_own_objects(site: Site) -> None:
    """The control: B's own token and user reach every object the walk above was refused."""
    objects = bravo_objects(site.bravo.app, "tests bravo")
    with signed_in(site.base, site.bravo.email) as (page, _), api_client(site.base, site.bravo.token) as api:
        for method, path in routes(site.bravo.app):
            if exempt(path) or method != "GET" or "{" not in path:
                continue
            client = api if path.startswith("/api/") else page
            response = client.get(path.format(**objects.ids))
            assert response.status_code == 200, f"GET {path} in its own workspace: {response.status_code}"


def _call(client: httpx.Client, method: str, url: str, csrf: str, body: dict[str, object]) -> httpx.Response:
    if method == "GET":
        return client.get(url)
    if url.startswith("/api/"):
        return client.request(method, url, json=body)
    return client.request(method, url, data={**body, "csrf_token": csrf})


@pytest.mark.parametrize("path", ["/api/v1/campaigns", "/api/v1/leads", "/api/v1/inbound"])
def test_a_request_without_a_token_gets_nothing(site: Site, path: str) -> None:
    with httpx.Client(timeout=60, base_url=site.base) as anonymous:
        response = anonymous.get(path)
        forged = anonymous.get(path, headers={"Authorization": "Bearer rg_" + "A" * 43})
    assert response.status_code == forged.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


# --- who may do what ----------------------------------------------------------------------


def capability_of(route: object) -> Capability | None:
    """The capability a route declares through its dependencies (at any depth)."""
    stack = [getattr(route, "dependant", None)]
    while stack:
        dependant = stack.pop()
        if dependant is None:
            continue
        found = declared_capability(dependant.call)
        if found is not None:
            return found
        stack.extend(dependant.dependencies)
    return None


def declared(site_app: App) -> dict[tuple[str, str], Capability]:
    api = create_app(site_app)
    found: dict[tuple[str, str], Capability] = {}
    for route in iter_route_contexts(api.routes):
        methods, path = route.methods, route.path
        if not methods or path is None or exempt(path):
            continue  # mounts (static files), and the routes exempt above with their reason
        capability = capability_of(route)
        for method in sorted(methods - {"HEAD"}):
            assert capability is not None, f"{method} {path} declares no capability (guards.page/api)"
            found[(method, path)] = capability
    return found


def test_every_route_declares_the_capability_it_needs(site: Site) -> None:
    found = declared(site.alpha.app)
    assert len(found) >= 70
    writes = {key for key, cap in found.items() if key[0] != "GET"}
    # Nothing that changes something is open to read rights (the account page is one's own).
    assert all(found[key].level > Level.READ or found[key] is Capability.ACCOUNT for key in writes)
    assert set(found.values()) == set(LEVELS)  # every capability is used by some route


@dataclass(frozen=True)
class Walker:
    label: str
    level: Level
    email: str | None = None  # a person signed in on the pages
    token: str | None = None  # a token on the API
    objects: dict[str, int] | None = None  # their own victims: a token, a second session


def walkers(site: Site, shared: dict[str, int]) -> list[Walker]:
    app = site.alpha.app
    found = [Walker("owner", Level.ADMIN, email=site.alpha.email)]
    with app.uow() as uow:
        for role in (Role.ADMIN, Role.MEMBER, Role.READONLY):
            add_user(uow, f"{role.value}@alpha.test", PASSWORD, role=role)
        uow.commit()
    for role in (Role.ADMIN, Role.MEMBER, Role.READONLY):
        found.append(Walker(role.value, role.level, email=f"{role.value}@alpha.test"))
    with app.uow() as uow:
        for level in Level:
            _v, secret = create_token(uow, f"walk {level.label}", Principal.operator(), scope=level)
            found.append(Walker(f"{level.label} token", level, token=secret))
        uow.commit()
    return [_with_victims(app, w, shared) for w in found]


def _with_victims(app: App, walker: Walker, shared: dict[str, int]) -> Walker:
    """Each walker revokes a token of its own and ends a session of its own, so that what it
    is allowed to do is allowed (another's token is refused for a member), and so that it does
    not revoke or end the credentials it walks with."""
    scoped = app.scoped
    own = dict(shared)
    with app.uow() as uow:
        if walker.token is not None:
            with scoped.installation() as read:
                caller = find_token(read, walker.token)
            assert caller is not None
            by = caller.principal
            victim, _ = create_token(uow, f"victim of {walker.label}", by, scope=Level.READ)
        else:
            assert walker.email is not None
            user = uow.session.scalars(select(m.User).where(m.User.email == walker.email)).one()
            victim, _ = create_token(
                uow, f"victim of {walker.label}", Principal.operator(), scope=Level.READ, for_user=user.id
            )
        uow.commit()
    own["token_id"] = victim.id
    if walker.email is not None:
        own["session_id"] = second_session(app, walker.email)
    return Walker(walker.label, walker.level, walker.email, walker.token, own)


def test_every_route_answers_each_role_and_scope_allowed_or_403_never_500(site: Site) -> None:
    """The issue's complaint: any user could do everything. Each page and API route is called
    as each role and with a token of each scope, on the workspace's own objects: 403 exactly
    where the role or scope is short of what the route declares, never a 5xx."""
    app = site.alpha.app
    shared = bravo_objects(app, f"tests {app.workspace}").ids  # the workspace's own objects this time
    needs = declared(app)
    seen: dict[str, set[int]] = {}
    for walker in walkers(site, shared):
        assert walker.objects is not None
        pages = walker.email is not None
        client_of = signed_in(site.base, walker.email) if pages and walker.email else None
        with client_of or api_client(site.base, walker.token or "") as opened:
            client, csrf = opened if isinstance(opened, tuple) else (opened, "")
            for (method, path), capability in needs.items():
                if path.startswith("/api/") == pages:
                    continue
                url = path.format(**{k: v for k, v in walker.objects.items() if "{" + k + "}" in path})
                body = BODIES.get(path) or FORMS.get(path) or {}
                if path in ("/api/v1/users", "/settings/users"):
                    body = {"email": f"new-{walker.label.replace(' ', '-')}@alpha.test", "role": "member"}
                response = _call(client, method, url, csrf, body)
                status = response.status_code
                allowed = walker.level >= capability.level
                assert status < 500, f"{walker.label}: {method} {url} answered {status}"
                assert (status == 403) != allowed, (
                    f"{walker.label} ({walker.level.label}): {method} {url} needs {capability.value}"
                    f" ({capability.level.label}) and answered {status}: {response.text[:200]}"
                )
                seen.setdefault(walker.label, set()).add(status)
    assert set(seen) == {"owner", "admin", "member", "readonly", "read token", "write token", "admin token"}
    assert 403 in seen["readonly"] and 403 in seen["read token"] and 403 in seen["member"]
    assert 403 not in seen["owner"] and 403 not in seen["admin token"]
