"""The composition root: the one place where engine, clock, transport and settings are wired."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from functools import cached_property

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from replyguard.adapters.db import models as m
from replyguard.adapters.db.engine import DEFAULT_URL, make_engine
from replyguard.adapters.transports.base import Transport
from replyguard.domain.clock import Clock, FixedClock, OffsetClock, SystemClock, parse_instant
from replyguard.service_layer.failpoints import Failpoints
from replyguard.service_layer.uow import UnitOfWork
from replyguard.settings import Settings

DEFAULT_WORKSPACE = "default"
DEFAULT_TRANSPORT = "maildir:outbox"


class WorkspaceMissing(LookupError):
    pass


@dataclass
class App:
    engine: Engine
    clock: Clock
    settings: Settings
    transport_spec: str = DEFAULT_TRANSPORT
    workspace: str = DEFAULT_WORKSPACE
    failpoints: Failpoints = field(default_factory=Failpoints)
    _transport: Transport | None = None

    @property
    def postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @cached_property
    def workspace_id(self) -> int:
        with Session(self.engine) as session:
            found = session.scalar(select(m.Workspace.id).where(m.Workspace.name == self.workspace))
        if found is None:
            raise WorkspaceMissing(
                f"workspace {self.workspace!r} does not exist in this database: run `replyguard init`"
            )
        return found

    def uow(self) -> UnitOfWork:
        return UnitOfWork(self.engine, self.clock, self.workspace_id, self.settings)

    @property
    def transport(self) -> Transport:
        if self._transport is None:
            from replyguard.adapters.transports import make_transport

            self._transport = make_transport(self.transport_spec)
        return self._transport

    def use_transport(self, transport: Transport) -> None:
        self._transport = transport

    def init_database(self) -> int:
        """Migrate to the newest schema and make sure this app's workspace exists."""
        # Alembic and Mako load only for `init`, not on every command.
        from replyguard.adapters.db.migrate import lock_for_migrations, upgrade

        upgrade(self.engine)
        with Session(self.engine) as session, session.begin():
            # Concurrent inits: the first creates the workspace, the others wait here for it.
            lock_for_migrations(session.connection())
            found = session.scalar(select(m.Workspace).where(m.Workspace.name == self.workspace))
            if found is None:
                found = m.Workspace(
                    name=self.workspace, secret=secrets.token_hex(32), created_at=self.clock.now()
                )
                session.add(found)
                session.flush()
            workspace_id = found.id
        self.__dict__["workspace_id"] = workspace_id
        return workspace_id

    def close(self) -> None:
        """Close the transport and every pooled connection; closing twice is harmless."""
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()
        self.engine.dispose()


def make_clock(now: str | None, *, running: bool = False) -> Clock:
    """`--now` as a fixed instant for one-shot commands, or a running one for long loops."""
    if not now:
        return SystemClock()
    instant = parse_instant(now)
    return OffsetClock(instant) if running else FixedClock(instant)


def bootstrap(
    db_url: str | None = None,
    *,
    now: str | None = None,
    running_clock: bool = False,
    transport: str | None = None,
    workspace: str | None = None,
    clock: Clock | None = None,
    settings: Settings | None = None,
    failpoints: Failpoints | None = None,
) -> App:
    url = db_url or os.environ.get("REPLYGUARD_DATABASE_URL") or DEFAULT_URL
    return App(
        engine=make_engine(url),
        clock=clock or make_clock(now or os.environ.get("REPLYGUARD_NOW"), running=running_clock),
        settings=settings or Settings.from_env(),
        transport_spec=transport or os.environ.get("REPLYGUARD_TRANSPORT") or DEFAULT_TRANSPORT,
        workspace=workspace or os.environ.get("REPLYGUARD_WORKSPACE") or DEFAULT_WORKSPACE,
        failpoints=failpoints or Failpoints.from_env(),
    )
