"""`/healthz` while ten template bombs are created at once (issue 21, item 1).

Usage: .venv/bin/python bench/healthz_under_bombs.py [--rounds 5] [--bombs 10] [--db sqlite|postgresql]

The real web app under uvicorn (one process, its thread pool), a scratch database. First
`/healthz` alone (200 requests, the baseline); then, `--rounds` times, `--bombs` threads each
POST /api/v1/campaigns with a campaign whose body is three nested `range(1000)` loops (the bomb
that held the SQLite write lock 32 s before the budget), while the main thread asks `/healthz`
again and again until every bomb has its answer (422, over the operation budget). Prints p50,
p99 and max of `/healthz` in both phases and how long a bomb took to be refused; writes
bench/results/healthz_under_bombs.json.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import httpx
import uvicorn
from common import percentile, scratch_db, write_result
from rich.console import Console
from rich.table import Table

from replyguard.bootstrap import bootstrap
from replyguard.domain.access import Level, Principal
from replyguard.entrypoints.http import create_app
from replyguard.service_layer.workspace.api_tokens import create_token

BOMB = """
product = "Atlas"
[campaign]
name = "NAME"
mailbox = "sam@atlas.test"
from_name = "Sam"
owner = "sam@atlas.test"
timezone = "UTC"
send_window = { days = ["mon", "tue", "wed", "thu", "fri"], start = "09:00", end = "17:00" }
daily_cap = 50
[[campaign.steps]]
wait = "0d"
subject = "Hello"
body = "NEST"
""".replace("NEST", "".join(f"{{% for {v} in range(1000) %}}" for v in "abc") + "x" + "{% endfor %}" * 3)


def _serve(app: object) -> tuple[str, uvicorn.Server, threading.Thread]:
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as `replyguard up` does
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.01)
    host, port = sock.getsockname()
    return f"http://{host}:{port}", server, thread


def _ms(samples: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples]
    return {"n": len(ms), "p50": percentile(ms, 50), "p99": percentile(ms, 99), "max": max(ms)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--bombs", type=int, default=10)
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    args = parser.parse_args()
    with scratch_db(args.db, "healthz_bombs") as url:
        app = bootstrap(url, running_clock=True)
        app.init_database()
        with app.uow() as uow:
            _view, token = create_token(uow, "bench", Principal.operator("bench"), scope=Level.ADMIN)
            uow.commit()
        base, server, thread = _serve(create_app(app))
        try:
            with httpx.Client(base_url=base, timeout=60) as client:
                idle = []
                for _ in range(200):
                    started = time.perf_counter()
                    assert client.get("/healthz").status_code == 200
                    idle.append(time.perf_counter() - started)
                busy: list[float] = []
                refused: list[float] = []
                answers: list[int] = []
                for round_ in range(args.rounds):

                    def bomb(n: int, round_: int = round_) -> None:
                        headers = {"Authorization": f"Bearer {token}"}
                        with httpx.Client(base_url=base, timeout=120, headers=headers) as api:
                            started = time.perf_counter()
                            source = BOMB.replace("NAME", f"Bomb {round_}.{n}")
                            answers.append(api.post("/api/v1/campaigns", json={"toml": source}).status_code)
                            refused.append(time.perf_counter() - started)

                    bombs = [threading.Thread(target=bomb, args=(n,)) for n in range(args.bombs)]
                    for b in bombs:
                        b.start()
                    while any(b.is_alive() for b in bombs):
                        started = time.perf_counter()
                        assert client.get("/healthz").status_code == 200
                        busy.append(time.perf_counter() - started)
                    for b in bombs:
                        b.join()
        finally:
            server.should_exit = True
            thread.join(10)
            app.close()
    assert set(answers) == {422}, answers
    rows = {"/healthz alone": _ms(idle), f"/healthz while {args.bombs} bombs run": _ms(busy)}
    table = Table(
        title=f"/healthz, {args.db}, {args.rounds} rounds of {args.bombs} bomb creates at once (ms)"
    )
    for column in ("", "n", "p50", "p99", "max"):
        table.add_column(column, justify="left" if not column else "right")
    for name, row in rows.items():
        table.add_row(name, str(row["n"]), f"{row['p50']:.1f}", f"{row['p99']:.1f}", f"{row['max']:.1f}")
    bomb_row = _ms(refused)
    table.add_row(
        "a bomb create, until its 422",
        str(bomb_row["n"]),
        f"{bomb_row['p50']:.1f}",
        f"{bomb_row['p99']:.1f}",
        f"{bomb_row['max']:.1f}",
    )
    Console().print(table)
    path = write_result(
        "healthz_under_bombs",
        {"db": args.db, "bombs": args.bombs, "rounds": args.rounds, **rows, "bomb_create": bomb_row},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
