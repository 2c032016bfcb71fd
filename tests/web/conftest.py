"""Fixtures of the web tests: the real app under uvicorn, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from argon2 import PasswordHasher

from replyguard.bootstrap import App
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.workspace import accounts
from tests.web.browser import browser  # noqa: F401 (a fixture, for the browser tests)
from tests.web.support import Tenant, serving, tenant


@pytest.fixture(autouse=True)
def quick_password_hashes(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Argon2id with small parameters: a real hash and a real verify, in milliseconds rather
    than the ~0.4 s per sign-in the production parameters cost on this machine."""
    monkeypatch.setattr(accounts, "_HASHER", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
    accounts._dummy_hash.cache_clear()
    yield
    accounts._dummy_hash.cache_clear()


@dataclass(frozen=True)
class Site:
    base: str
    alpha: Tenant
    bravo: Tenant

    @property
    def db(self) -> str:
        return self.alpha.app.engine.dialect.name


@pytest.fixture
def site(app: App) -> Iterator[Site]:
    """Two workspaces (alpha: the app's own, bravo: another) with a user and a token each,
    and the web app serving both."""
    alpha = tenant(app, app.workspace, "ann@alpha.test")
    bravo = tenant(app, "bravo", "bob@bravo.test")
    with serving(create_app(app)) as base:
        yield Site(base, alpha, bravo)
