"""The port through which a use case reaches what the running process provides.

The service layer never imports the composition root (`bootstrap.App`): it states here what a
use case may ask of the process that runs it, and `bootstrap.App` (the CLI, `serve`, `up`) or
any test double satisfies it structurally. Most use cases need only `uow()` — a unit of work
carries the clock, the workspace and the settings — and the few that leave the database (the
worker, a person's answer, notices, the audit) also take the transport and the hooks (the named
points of those paths, `hooks.py`); the worker and a person's answer take each mailbox's own
(`transport_for`: a connected mailbox's SMTP account, or the default transport).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sqlalchemy import Connection, Engine

from replyguard.adapters.transports.base import Transport
from replyguard.domain.clock import Clock
from replyguard.service_layer.hooks import Hooks
from replyguard.service_layer.uow import UnitOfWork
from replyguard.settings import Settings


class Runtime(Protocol):
    """Engine, clock, settings, workspace, transport and hooks of one running process."""

    @property
    def engine(self) -> Engine: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def hooks(self) -> Hooks: ...

    @property
    def workspace_id(self) -> int: ...

    @property
    def postgres(self) -> bool: ...

    @property
    def transport(self) -> Transport: ...

    def transport_for(self, mailbox_id: int | None, conn: Connection | None = None) -> Transport:
        """The transport that sends for a mailbox: its own account's, or the default one
        (`conn`: read the mailbox through this connection)."""
        ...

    def sent_folder_for(self, mailbox_id: int | None) -> SentCopies | None:
        """Where copies of the mailbox's sent emails go, when its provider keeps none itself."""
        ...

    def uow(self) -> UnitOfWork:
        """A fresh unit of work in this process's workspace."""
        ...


class SentCopies(Protocol):
    """A mailbox's Sent folder (adapters/sent_folder.py)."""

    def append(self, message: bytes, when: datetime) -> bool: ...


class Rewired:
    """`base` seen through another clock or other hooks, everything else shared.

    For a use case that observes its own run (the audit records the points it passes and
    runs recovery as it would run past a lease): what `dataclasses.replace` on the composition
    root did, without the service layer knowing what the composition root is.
    """

    def __init__(self, base: Runtime, *, clock: Clock | None = None, hooks: Hooks | None = None):
        self._base = base
        self._clock = clock or base.clock
        self._hooks = hooks or base.hooks

    @property
    def engine(self) -> Engine:
        return self._base.engine

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def settings(self) -> Settings:
        return self._base.settings

    @property
    def hooks(self) -> Hooks:
        return self._hooks

    @property
    def workspace_id(self) -> int:
        return self._base.workspace_id

    @property
    def postgres(self) -> bool:
        return self._base.postgres

    @property
    def transport(self) -> Transport:
        return self._base.transport

    def transport_for(self, mailbox_id: int | None, conn: Connection | None = None) -> Transport:
        return self._base.transport_for(mailbox_id, conn)

    def sent_folder_for(self, mailbox_id: int | None) -> SentCopies | None:
        return self._base.sent_folder_for(mailbox_id)

    def uow(self) -> UnitOfWork:
        return UnitOfWork(self.engine, self._clock, self.workspace_id, self.settings)
