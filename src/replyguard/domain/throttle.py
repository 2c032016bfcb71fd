"""How sign-in attempts are slowed down, without handing anybody a way to lock a person out.

Three limits, each answering a different attacker:
- **One account from one client** (a browser that signed in to this account before, known by
  its device cookie; otherwise the client's address): a few free mistakes, then a growing wait
  between tries (1 s, 2 s, 4 s ... at most 15 minutes). A person who mistypes never notices; a
  guesser at one place gets a handful of tries an hour.
- **One account from everywhere else**: far above what a person types (100 failures an hour),
  against guessing spread over many addresses. It refuses new clients only: a browser that
  signed in to this account before keeps its own, per-client, limit, so strangers failing on
  purpose cannot lock its owner out. An admin can lift it (`users unlock`).
- **One client address, every account**: the same bound against one address trying many
  accounts, and the same exemption for a known browser.

Pure arithmetic; the counting is `service_layer/workspace/login_throttle.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True, slots=True)
class LoginPolicy:
    #: Failures of one account from one client before waits start.
    free_failures: int = 3
    first_delay: timedelta = timedelta(seconds=1)
    longest_delay: timedelta = timedelta(minutes=15)
    #: Failures of one account from clients it does not know, within `window`.
    per_account: int = 100
    #: Failures from one client address over every account, within `window`.
    per_address: int = 100
    window: timedelta = timedelta(hours=1)
    #: Attempts older than this are forgotten (and deleted).
    memory: timedelta = timedelta(days=1)

    def delay(self, failures: int) -> timedelta:
        """How long after the last of `failures` consecutive failures of one account from one
        client the next try is heard."""
        if failures < self.free_failures:
            return timedelta(0)
        doublings = min(failures - self.free_failures, 30)  # 2**30 s is past any cap
        return min(self.first_delay * (1 << doublings), self.longest_delay)
