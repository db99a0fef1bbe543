"""The soak's faults, drawn at random from a seeded generator and undone on time.

Each fault starts now and, when it has a duration, is undone by :meth:`Faults.tick` once
its time is up (a killed host restarted, a link brought back up, Redis started again).
:meth:`Faults.heal` undoes everything still in effect, at the end or on an error.
"""

from __future__ import annotations

import json
import random
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass

from soak_hosts import WORKERS, Hosts

KINDS = ("kill_worker", "cut_link", "restart_redis", "restart_web", "mock_errors", "drop_pg")
WEIGHTS = (3, 3, 1, 1, 2, 1)


@dataclass
class Pending:
    due: float
    kind: str
    host: str


class Faults:
    def __init__(self, hosts: Hosts, rng: random.Random, *, lease_s: float, say) -> None:
        self.hosts = hosts
        self.rng = rng
        self.lease_s = lease_s
        self.say = say
        self.pending: list[Pending] = []
        self.count: Counter[str] = Counter()
        self.log: list[str] = []
        # Faults that may lose a shard's calls in flight (each is at most every shard on
        # the host it hit): the paid-twice bound counts them.
        self.shard_losses = 0

    def busy(self, host: str) -> bool:
        return any(p.host == host for p in self.pending)

    def inject(self, started: float) -> None:
        """The next fault: every kind once first (in a seeded order), then drawn by weight."""
        if not self.count and not hasattr(self, "_first"):
            self._first = self.rng.sample(KINDS, len(KINDS))
        first = getattr(self, "_first", [])
        kind = first.pop(0) if first else self.rng.choices(KINDS, WEIGHTS)[0]
        getattr(self, kind)()
        self.count[kind] += 1
        self.log.append(f"{time.monotonic() - started:7.1f}s {self.log_line}")
        self.say(f"fault: {self.log_line}")

    def tick(self) -> None:
        now = time.monotonic()
        for item in [p for p in self.pending if p.due <= now]:
            self.pending.remove(item)
            self._undo(item)

    def heal(self) -> None:
        for item in list(self.pending):
            self.pending.remove(item)
            self._undo(item)

    # --- the faults --------------------------------------------------------------------

    def _free_worker(self) -> str | None:
        free = [h for h in WORKERS if not self.busy(h)]
        return self.rng.choice(free) if free else None

    def kill_worker(self) -> None:
        host = self._free_worker()
        if host is None:
            return self.mock_errors()
        hit = self.hosts.kill_host(host)
        down = self.rng.uniform(2, 8)
        self.pending.append(Pending(time.monotonic() + down, "restart_worker", host))
        self.shard_losses += 2
        self.log_line = f"SIGKILL {hit} processes on {host}, restart in {down:.1f}s"

    def cut_link(self) -> None:
        """A worker's link (often for longer than the lease, so its claims are taken over
        while it still holds them), or the mock's or the database's for a few seconds."""
        host = self.rng.choice([*WORKERS, *WORKERS, "mock", "db"])
        if self.busy(host):
            return self.mock_errors()
        if host in WORKERS:
            length = self.rng.choice(
                [self.rng.uniform(2, 8), self.rng.uniform(1.2, 2) * self.lease_s]
            )
            self.shard_losses += 2
        else:
            length = self.rng.uniform(2, 6)
            self.shard_losses += 2 * len(WORKERS) if host == "mock" else 0
        self.hosts.net.cut(host)
        self.pending.append(Pending(time.monotonic() + length, "mend", host))
        self.log_line = f"link of {host} down for {length:.1f}s"

    def restart_redis(self) -> None:
        if self.busy("db"):
            return self.mock_errors()
        self.hosts.kill_redis()
        down = self.rng.uniform(1, 5)
        self.pending.append(Pending(time.monotonic() + down, "start_redis", "db"))
        self.log_line = f"Redis killed (its queue lost), restart in {down:.1f}s"

    def restart_web(self) -> None:
        if self.busy("web"):
            return self.mock_errors()
        self.hosts.kill_host("web")
        self.pending.append(Pending(time.monotonic() + 1, "start_web", "web"))
        self.log_line = "web process killed, restart in 1s"

    def mock_errors(self) -> None:
        status = self.rng.choice([429, 500, 503])
        rate = round(self.rng.uniform(0.3, 1.0), 2)
        seconds = round(self.rng.uniform(2, 8), 1)
        body = json.dumps({"status": status, "rate": rate, "seconds": seconds}).encode()
        try:
            control(self.hosts.mock_url, body)
            self.log_line = f"mock answers {status} to {rate:.0%} of calls for {seconds}s"
        except OSError as error:  # the mock's link is down: the burst is that
            self.log_line = f"mock burst not sent ({error})"

    def drop_pg(self) -> None:
        """Terminate every evalsite connection to PostgreSQL, mid-transaction or not."""
        if self.busy("db"):
            return self.mock_errors()
        import psycopg

        url = self.hosts.db_url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(url, connect_timeout=5) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = 'evalsite' AND pid <> pg_backend_pid()"
            ).fetchall()
        self.shard_losses += 2 * len(WORKERS)
        self.log_line = f"PostgreSQL: {len(rows)} connections terminated"

    # --- undoing them --------------------------------------------------------------------

    def _undo(self, item: Pending) -> None:
        if item.kind == "restart_worker":
            self.hosts.start_worker(item.host, self.lease_s)
        elif item.kind == "mend":
            self.hosts.net.mend(item.host)
        elif item.kind == "start_redis":
            self.hosts.start_redis()
        elif item.kind == "start_web":
            self.hosts.start_web(self.lease_s)
        self.say(f"undone: {item.kind} {item.host}")


# Never through a proxy from the environment: the soak talks to its own hosts only.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def control(mock_url: str, body: bytes) -> None:
    request = urllib.request.Request(  # noqa: S310 - always http://<the mock host>
        f"{mock_url}/control", data=body, headers={"content-type": "application/json"}
    )
    with DIRECT.open(request, timeout=3) as response:
        response.read()
