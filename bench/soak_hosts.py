"""The soak's processes, each on its host (namespace): PostgreSQL and Redis on `db`, the mock
provider on `mock`, `evalsite worker` on `w1`…`w3`, `evalsite serve --no-worker` on `web`.

PostgreSQL is a cluster of the soak's own (initdb into the soak's folder, run as the
`postgres` user, listening on the db host's address only); Redis is the soak's own
`redis-server` (no persistence, as a broker restart then loses what it held). The machine's
own PostgreSQL and Redis are never touched.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from procs import MOCK, Processes, evalsite_command
from soak_net import Network, kill_namespace

PG_PORT = 5432
REDIS_PORT = 6379
MOCK_PORT = 8080
WEB_PORT = 8000
WORKERS = ("w1", "w2", "w3")
KEY_VAR = "EVALSITE_ENDPOINT_MOCK_KEY"


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def missing_tools() -> str | None:
    """Why the soak's services cannot start here, or None."""
    if pg_bin() is None:
        return "PostgreSQL's server binaries (/usr/lib/postgresql/*/bin) are not installed"
    if shutil.which("redis-server") is None:
        return "redis-server is not installed"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "there is no `postgres` user to run the soak's PostgreSQL as"
    return None


def wait_port(address: str, port: int, timeout_s: float, what: str, check=None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check is not None:
            check()
        with contextlib.suppress(OSError), socket.create_connection((address, port), 0.5):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on {address}:{port} within {timeout_s:g}s")


class Hosts:
    """Starts, kills and restarts each host's processes; the soak's environment for each."""

    def __init__(self, net: Network, processes: Processes, folder: Path, *, latency_ms: float):
        self.net = net
        self.processes = processes
        self.folder = folder
        self.latency_ms = latency_ms
        # the mock's key: only the workers get it (passed as --key=KEY: a key may start with "-")
        self.key = secrets.token_urlsafe(24)
        self.secret = secrets.token_urlsafe(50)
        self.data_dir = folder / "data"  # one shared volume: reports written by any worker
        self.data_dir.mkdir(mode=0o700)
        self.mock_log = folder / "mock-requests.jsonl"
        self.restarts: dict[str, int] = {}

    @property
    def db_url(self) -> str:
        return f"postgres://postgres@{self.net.address('db')}:{PG_PORT}/evalsite"

    @property
    def redis_url(self) -> str:
        return f"redis://{self.net.address('db')}:{REDIS_PORT}/0"

    @property
    def mock_url(self) -> str:
        return f"http://{self.net.address('mock')}:{MOCK_PORT}"

    @property
    def web_url(self) -> str:
        return f"http://{self.net.address('web')}:{WEB_PORT}"

    def evalsite_env(self, *, lease_s: float, worker: bool) -> dict[str, str]:
        """The settings every evalsite process shares; the provider key on workers only."""
        keep = {k: v for k, v in os.environ.items() if k in {"PATH", "LANG", "LC_ALL", "HOME"}}
        env = keep | {
            "DJANGO_SETTINGS_MODULE": "evalsite.settings",
            "EVALSITE_DATA_DIR": str(self.data_dir),
            "EVALSITE_SECRET_KEY": self.secret,
            "DATABASE_URL": self.db_url,
            "EVALSITE_REDIS_URL": self.redis_url,
            "EVALSITE_CLAIM_LEASE_S": f"{lease_s:g}",
            "EVALSITE_WORKERS": "2",
            "EVALSITE_WORKER_STOP_GRACE_S": "5",
            "EVALSITE_ALLOWED_HOSTS": self.net.address("web"),
            "EVALSITE_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        if worker:
            env[KEY_VAR] = self.key
        else:
            env["EVALSITE_KEYS_ON_WORKERS"] = "1"  # the web holds no key
        return env

    # --- db host -------------------------------------------------------------------------

    def start_postgres(self) -> None:
        bin_dir, data = pg_bin(), self.folder / "pg"
        data.mkdir()
        os.chmod(self.folder, 0o711)  # noqa: S103 - postgres must reach its folder, no more
        shutil.chown(data, "postgres", "postgres")
        initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                  "-E", "UTF8", "--no-sync", "--no-instructions"]  # fmt: skip
        done = subprocess.run(_as_postgres(initdb), capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.strip()[-2000:]}")
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {self.net.subnet} trust\n")
        argv = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(PG_PORT),
                "-c", f"listen_addresses={self.net.address('db')}",
                "-c", f"unix_socket_directories={data}", "-c", "max_connections=400",
                "-c", "fsync=off", "-c", "synchronous_commit=off",
                "-c", "full_page_writes=off", "-c", "shared_buffers=128MB"]  # fmt: skip
        self._start("postgres", "db", _as_postgres(argv), dict(os.environ))
        wait_port(self.net.address("db"), PG_PORT, 30, "PostgreSQL", self._alive("postgres"))
        import psycopg

        for _ in range(50):  # accepting TCP a moment before it accepts logins
            try:
                with psycopg.connect(self.db_url.rsplit("/", 1)[0] + "/postgres") as conn:
                    conn.autocommit = True
                    conn.execute("CREATE DATABASE evalsite")
                return
            except psycopg.OperationalError:
                time.sleep(0.2)
        raise RuntimeError("PostgreSQL did not accept a login")

    def start_redis(self) -> None:
        argv = ["redis-server", "--bind", self.net.address("db"), "--port", str(REDIS_PORT),
                "--save", "", "--appendonly", "no", "--protected-mode", "no"]  # fmt: skip
        self._start("redis", "db", argv, dict(os.environ))
        wait_port(self.net.address("db"), REDIS_PORT, 15, "Redis", self._alive("redis"))

    def kill_redis(self) -> None:
        self.processes.stop(["redis"], grace_s=0.0)  # SIGKILL after no grace

    # --- mock, workers, web ----------------------------------------------------------------

    def start_mock(self, seed: int) -> None:
        argv = [sys.executable, str(MOCK), "--host", self.net.address("mock"),
                "--port", str(MOCK_PORT), "--latency-ms", f"{self.latency_ms:g}",
                f"--key={self.key}", "--log", str(self.mock_log), "--seed", str(seed),
                "--max-seconds", "7200"]  # fmt: skip
        self._start("mock", "mock", argv, dict(os.environ))
        wait_port(self.net.address("mock"), MOCK_PORT, 15, "the mock", self._alive("mock"))

    def start_worker(self, host: str, lease_s: float) -> None:
        env = self.evalsite_env(lease_s=lease_s, worker=True)
        self._start(f"worker-{host}", host, [*evalsite_command(), "worker"], env)

    def start_web(self, lease_s: float) -> None:
        env = self.evalsite_env(lease_s=lease_s, worker=False)
        argv = [*evalsite_command(), "serve", "--no-worker", "--host", self.net.address("web"),
                "--port", str(WEB_PORT)]  # fmt: skip
        self._start("web", "web", argv, env)
        wait_port(self.net.address("web"), WEB_PORT, 60, "the web process", self._alive("web"))

    def kill_host(self, host: str) -> int:
        """SIGKILL every process on `host` (the namespace), as a machine lost outright."""
        hit = kill_namespace(self.net.namespace(host), signal.SIGKILL)
        names = [n for n, p in self.processes.started if n.endswith(host) or n == host]
        self.processes.stop(names, grace_s=0.0)
        return hit

    def stop_workers(self, hosts=WORKERS) -> None:
        """SIGTERM to each worker's main process, SIGKILL to what is left after the grace."""
        self.processes.stop([f"worker-{h}" for h in hosts], grace_s=15.0)
        for host in hosts:
            kill_namespace(self.net.namespace(host))

    def running(self, name: str) -> bool:
        return any(n == name and p.poll() is None for n, p in self.processes.started)

    def _start(self, name: str, host: str, argv: list[str], env: dict) -> None:
        self.restarts[name] = self.restarts.get(name, -1) + 1
        log_name = name if not self.restarts[name] else f"{name}.{self.restarts[name]}"
        self.processes.start(log_name, self.net.exec_argv(host, argv), env)
        # Processes names its children by their log; keep one name per service.
        self.processes.started[-1] = (name, self.processes.started[-1][1])

    def _alive(self, name: str):
        def check() -> None:
            if not self.running(name):
                raise RuntimeError(f"{name} exited:\n{self._tail(name)}")

        return check

    def _tail(self, name: str) -> str:
        runs = self.restarts.get(name, 0)
        return self.processes.tail(name if not runs else f"{name}.{runs}", 30)


def _as_postgres(argv: list[str]) -> list[str]:
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]
