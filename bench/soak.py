"""A multi-host soak: PostgreSQL, Redis, a mock provider, three worker hosts and the web process,
each in its own network namespace on this machine, with faults injected at random (seeded)
while several runs go, and the invariants checked at the end (issue 20, docs/scale-out.md).

    .venv/bin/python bench/soak.py [--minutes 5] [--seed 1] [--ci] [--json FILE] [--keep]
    .venv/bin/python bench/soak.py --clean     # only remove what a soak killed outright left

Needs root and iproute2 (namespaces, veth pairs, a bridge), PostgreSQL's server binaries and
redis-server. It exits 0 when every invariant held and 3 hosts were not slower than 1, 1 when
one failed, and 2 when it cannot run here (the reason on stderr). `--ci` is the bounded form
CI's second leg runs (tests/ops/test_soak.py): at most about three minutes in all.

Traffic goes only to loopback and to the addresses of the namespaces it makes, on a private
subnet (``--subnet``, default 10.213.7.0/24) that it refuses to use if anything on the
machine already does. Everything it starts (namespaces, links, processes, its folder under
/tmp/evalsite-soak) is removed on exit, on Ctrl-C and on errors; what a soak killed outright
left behind is removed by the next one before it starts.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import ipaddress
import json
import os
import random
import secrets
import shutil
import signal
import stat
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from procs import ROOT, Processes  # noqa: E402
from soak_hosts import KEY_VAR, WORKERS, Hosts, missing_tools  # noqa: E402
from soak_net import STATE_ROOT, Network, namespaces_possible, remove_leftovers, subnet_in_use  # noqa: E402

CANNOT_RUN = 2


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--minutes", type=float, default=5.0, help="minutes of faults (default 5)")
    add("--seed", type=int, default=1)
    add("--ci", action="store_true", help="the bounded form: about 1 minute of faults")
    add("--subnet", default="10.213.7.0/24")
    add("--lease-s", type=float, default=20.0, help="EVALSITE_CLAIM_LEASE_S on every host")
    add("--latency-ms", type=float, default=200.0)
    add("--active-runs", type=int, default=4, help="runs going at once during the faults")
    add("--throughput-runs", type=int, default=3)
    add("--throughput-answers", type=int, default=1600, help="answers per throughput run")
    add("--concurrency", type=int, default=64, help="of each throughput run")
    add("--json", type=Path)
    add("--keep", action="store_true", help="keep the folder (logs, data) for a look")
    add("--clean", action="store_true", help="only remove what a dead soak left, and exit")
    args = parser.parse_args(argv)
    if args.ci:  # about 3 minutes in all on this machine, start to clean-up
        args.minutes = min(args.minutes, 0.9)
        args.throughput_answers = min(args.throughput_answers, 640)
        args.lease_s = min(args.lease_s, 10.0)
    args.subnet = ipaddress.ip_network(args.subnet)
    return args


class Soak:
    def __init__(self, args, folder: Path) -> None:
        self.args = args
        self.folder = folder
        self.rng = random.Random(args.seed)
        self.processes = Processes(folder / "logs")
        self.net = Network(args.subnet)
        self.hosts = Hosts(self.net, self.processes, folder, latency_ms=args.latency_ms)
        self.started = time.monotonic()
        self.report: dict = {"seed": args.seed, "minutes": args.minutes, "ci": args.ci}
        self.teardown = threading.Event()

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {text}", flush=True)

    # --- set-up ----------------------------------------------------------------------------

    def up(self) -> None:
        self.net.up()
        self.hosts.start_postgres()
        self.hosts.start_redis()
        self.hosts.start_mock(self.args.seed)
        env = self.hosts.evalsite_env(lease_s=self.args.lease_s, worker=False)
        env.pop("PATH", None)
        os.environ.update(env)
        import django

        django.setup()
        from database import set_up_database

        set_up_database(self.hosts.mock_url, key_env_var=KEY_VAR)
        self.say(f"hosts up on {self.args.subnet}; database migrated")
        self.hosts.start_web(self.args.lease_s)
        self.hosts.start_worker("w1", self.args.lease_s)

    # --- throughput: the same runs on 1 and on 3 worker hosts ------------------------------

    def throughput(self, hosts: int) -> dict:
        from database import SuiteShape
        from soak_runs import plan_and_queue, wait_final

        from runs.models import Run

        self._warm_up()
        shape = SuiteShape(cases=self.args.throughput_answers // 2)
        began = dt.datetime.now(dt.UTC)
        launched = [
            plan_and_queue(
                self.folder,
                shape,
                self.args.concurrency,
                cap_factor=2.0,
                label=f"soak-throughput-{hosts}-{n}",
            )
            for n in range(self.args.throughput_runs)
        ]
        ids = [item.run_id for item in launched]
        found = wait_final(ids, 600)
        runs = Run.objects.filter(pk__in=ids)
        wall = (max(r.finished_at for r in runs if r.finished_at) - began).total_seconds()
        ideal = shape.answers * self.args.latency_ms / 1000 / self.args.concurrency
        result = {
            "hosts": hosts,
            "runs": len(ids),
            "answers": shape.answers * len(ids),
            "wall_s": round(wall, 2),
            "ideal_one_run_s": round(ideal, 2),
            "statuses": sorted(set(found.values())),
        }
        self.say(f"throughput, {hosts} worker host(s): {result}")
        return result

    def _warm_up(self) -> None:
        from database import SuiteShape
        from soak_runs import plan_and_queue, wait_final

        warm = plan_and_queue(
            self.folder, SuiteShape(cases=8), 8, cap_factor=2.0, label="soak-warm-up"
        )
        if wait_final([warm.run_id], 120).get(warm.run_id) != "done":
            raise RuntimeError(
                f"the warm-up run did not finish:\n{self.processes.tail('worker-w1')}"
            )

    # --- the faults ------------------------------------------------------------------------

    def soak(self) -> list[str]:
        from soak_faults import Faults
        from soak_runs import Sampler

        args = self.args
        self.faults = Faults(
            self.hosts, random.Random(args.seed + 1), lease_s=args.lease_s, say=self.say
        )
        self.sampler = Sampler()
        self.sampler.start()
        stop = threading.Event()
        injector = threading.Thread(target=self._inject, args=(stop,), name="faults", daemon=True)
        cases = (40, 120) if args.ci else (150, 400)
        launched: list[str] = []
        self.concurrencies: list[int] = [args.concurrency]
        self.enqueue_failures = 0
        ends = time.monotonic() + args.minutes * 60
        injector.start()
        try:
            while time.monotonic() < ends:
                self._top_up(launched, cases)
                time.sleep(1.0)
        finally:
            stop.set()
            while self.faults.pending and injector.is_alive():
                time.sleep(0.1)  # the thread that made a fault undoes it
            self.faults.heal()
        return launched

    def _top_up(self, launched: list[str], cases: tuple[int, int]) -> None:
        """Launch runs until `--active-runs` are going; the database may be cut off."""
        from django.db import connection
        from soak_runs import FINAL, plan_and_queue, soak_shape, statuses

        try:
            found = statuses(launched)
            active = sum(found.get(r) not in FINAL for r in launched)
            for _ in range(self.args.active_runs - active):
                shape, concurrency, factor = soak_shape(self.rng, cases)
                item = plan_and_queue(
                    self.folder, shape, concurrency, cap_factor=factor, label="soak"
                )
                launched.append(item.run_id)
                self.sampler.watch(item.run_id)
                self.concurrencies.append(concurrency)
                self.enqueue_failures += bool(item.queued)
                note = f"; NOT QUEUED: {item.queued[:80]}" if item.queued else ""
                self.say(
                    f"launched {item.run_id}: {shape.answers} answers, C={concurrency}, "
                    f"cap {factor:g}x the estimate{note}"
                )
        except Exception as error:  # noqa: BLE001 - the database cut off or its link down
            self.say(f"launcher: {type(error).__name__}: {str(error)[:160]}")
            connection.close()

    def _inject(self, stop: threading.Event) -> None:
        gap = (4.0, 10.0) if self.args.ci else (6.0, 14.0)
        due = time.monotonic() + self.faults.rng.uniform(*gap)
        while not stop.is_set():
            try:
                self.faults.tick()
                if time.monotonic() >= due:
                    self.faults.inject(self.started)
                    due = time.monotonic() + self.faults.rng.uniform(*gap)
            except Exception as error:  # noqa: BLE001 - a fault that could not be made
                self.say(f"fault failed: {type(error).__name__}: {error}")
            stop.wait(0.1)
        try:
            self.faults.heal()
        except Exception as error:  # noqa: BLE001 - the main thread tries again
            self.say(f"healing failed: {type(error).__name__}: {error}")
        # This thread lives until the teardown: the processes it restarted get SIGTERM from
        # the kernel when the thread that started them ends (PR_SET_PDEATHSIG is per thread).
        self.teardown.wait()

    def ensure_all_up(self) -> None:
        for host in WORKERS:
            if not self.hosts.running(f"worker-{host}"):
                self.hosts.start_worker(host, self.args.lease_s)
        if not self.hosts.running("redis"):
            self.hosts.start_redis()
        if not self.hosts.running("web"):
            self.hosts.start_web(self.args.lease_s)

    # --- the end: every run final, then the invariants ----------------------------------------

    def drain(self, launched: list[str]) -> dict[str, str]:
        from soak_runs import wait_final

        self.ensure_all_up()
        timeout = 6 * self.args.lease_s + (90 if self.args.ci else 300)
        self.say(f"faults over; waiting up to {timeout:.0f}s for {len(launched)} runs to end")
        began = time.monotonic()
        found = wait_final(launched, timeout)
        self.report["drain_s"] = round(time.monotonic() - began, 1)
        self.say(f"every run ended {self.report['drain_s']}s after the faults")
        self.sampler.stop.set()
        self.sampler.join(5)
        return found

    def check(self, launched: list[str]):
        from soak_checks import Paid, check_all

        from runs.models import Run

        # docs/running.md's bound, per lost shard: its claim window k + max(4, k / 2), k its
        # share of the concurrency over both models (a resumed shard is a run's only one).
        k = 2 * max(self.concurrencies)
        ahead = k + max(4, k // 2)
        bound = self.faults.shard_losses * ahead
        paid = Paid.read(self.hosts.mock_log)
        checked = check_all(
            launched, paid, self.sampler.seen.over_cap, bound, self.hosts.data_dir / "reports"
        )
        checked.figures |= {
            "faults": dict(self.faults.count),
            "enqueue_failures": self.enqueue_failures,
            "resumed_by_sweep": Run.objects.filter(
                pk__in=launched, resumed_at__isnull=False
            ).count(),
            "cap_samples": self.sampler.seen.samples,
            "web_ok_at_end": self._web_ok(),
        }
        web = [] if checked.figures["web_ok_at_end"] else ["GET /login/ failed"]
        checked.failures["the web process answers at the end"] = web or self._web_pages(launched)
        return checked

    def _web_pages(self, launched: list[str]) -> list[str]:
        """Logged in, the web shows a few finished runs and serves their report.json from the
        shared data dir, byte for byte what a worker wrote."""
        import httpx
        from django.contrib.auth.models import User
        from pages import USERNAME, log_in

        from runs.models import Run

        password = secrets.token_urlsafe(16)
        User.objects.filter(username=USERNAME).delete()
        User.objects.create_user(USERNAME, password=password)
        problems = []
        with httpx.Client(trust_env=False, timeout=30) as client:
            log_in(client, self.hosts.web_url, password)
            for run in Run.objects.filter(pk__in=launched, status="done")[:5]:
                page = client.get(f"{self.hosts.web_url}/runs/{run.pk}/")
                if page.status_code != 200 or run.pk not in page.text:
                    problems.append(f"GET /runs/{run.pk}/ returned {page.status_code}")
                served = client.get(f"{self.hosts.web_url}/runs/{run.pk}/files/report.json")
                written = (run.report_dir / "report.json").read_bytes()
                if served.status_code != 200 or served.content != written:
                    problems.append(
                        f"the web served {run.pk}'s report.json as {served.status_code}"
                    )
        return problems

    def _web_ok(self) -> bool:
        from soak_faults import DIRECT

        try:
            with DIRECT.open(f"{self.hosts.web_url}/login/", timeout=10) as response:
                return response.status == 200
        except OSError:
            return False

    def down(self) -> None:
        """Workers and web first (while the database and the broker still answer, so they
        stop cleanly), then the rest, then the namespaces."""
        self.teardown.set()
        with contextlib.suppress(Exception):
            self.processes.stop([f"worker-{h}" for h in WORKERS] + ["web"], grace_s=8.0)
        self.processes.stop_all(grace_s=8.0)
        self.net.down()


def print_report(report: dict) -> None:
    print("\n== soak report", flush=True)
    fig = report.get("figures", {})
    for key in (
        "runs",
        "statuses",
        "answers",
        "judge_calls",
        "errors",
        "paid_calls",
        "paid_twice",
        "paid_twice_bound",
        "faults",
        "enqueue_failures",
        "resumed_by_sweep",
        "cap_samples",
    ):
        if key in fig:
            print(f"  {key}: {fig[key]}")
    for item in report.get("throughput", []):
        print(
            f"  throughput, {item['hosts']} worker host(s): {item['runs']} runs x "
            f"{item['answers'] // item['runs']} answers at C={report['concurrency']}: "
            f"{item['wall_s']}s (one run's ideal {item['ideal_one_run_s']}s)"
        )
    if "speed_up" in report:
        print(f"  3 hosts vs 1: {report['speed_up']:.2f}x faster")
    for name, problems in report.get("invariants", {}).items():
        print(f"  {'held' if not problems else 'FAILED'}: {name}")
        for line in problems[:10]:
            print(f"      {line}")
        if len(problems) > 10:
            print(f"      … and {len(problems) - 10} more")
    for line in report.get("fault_log", []):
        print(f"  fault {line}")


def run_soak(args, folder: Path) -> int:
    soak = Soak(args, folder)
    report = soak.report  # drain() adds to it
    report |= {
        "concurrency": args.concurrency,
        "lease_s": args.lease_s,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
    }
    try:
        soak.up()
        one = soak.throughput(1)
        for host in WORKERS[1:]:
            soak.hosts.start_worker(host, args.lease_s)
        time.sleep(3)
        three = soak.throughput(3)
        report["throughput"] = [one, three]
        report["speed_up"] = one["wall_s"] / three["wall_s"]
        launched = soak.soak()
        soak.drain(launched)
        checked = soak.check(launched)
        report |= {
            "figures": checked.figures,
            "invariants": checked.failures,
            "fault_log": soak.faults.log,
        }
        report["invariants"]["the throughput runs are done"] = [
            f"{item['hosts']} host(s): {item['statuses']}"
            for item in (one, three)
            if item["statuses"] != ["done"]
        ]
        if report["speed_up"] < 1.0:
            report["invariants"]["3 worker hosts are not slower than 1"] = [
                f"1 host {one['wall_s']}s, 3 hosts {three['wall_s']}s"
            ]
        else:
            report["invariants"]["3 worker hosts are not slower than 1"] = []
    finally:
        with contextlib.suppress(Exception):
            from django.db import connections

            connections.close_all()
        soak.down()
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", "utf-8")
    return 1 if any(report.get("invariants", {"missing": [1]}).values()) else 0


def hold_lock(wait_s: float):
    """The soaks' lock (one soak at a time on a machine: the namespaces' names are fixed, and
    a starting soak removes what a dead one left); an open file holding it, or why not."""
    STATE_ROOT.mkdir(mode=0o711, exist_ok=True)
    found = STATE_ROOT.lstat()
    if stat.S_ISLNK(found.st_mode) or found.st_uid != os.geteuid():
        return f"{STATE_ROOT} is not a folder of this user's"
    handle = (STATE_ROOT / "lock").open("w")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() > deadline:
                return f"another soak held {STATE_ROOT / 'lock'} for {wait_s:g}s"
            time.sleep(2)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    reason = namespaces_possible() or missing_tools()
    if reason:
        print(f"soak cannot run here: {reason}", file=sys.stderr)
        return CANNOT_RUN
    lock = hold_lock(wait_s=600)
    if isinstance(lock, str):
        print(f"soak cannot run here: {lock}", file=sys.stderr)
        return CANNOT_RUN
    for item in remove_leftovers():
        print(f"removed a previous soak's leftover: {item}", flush=True)
    if args.clean:
        return 0
    used = subnet_in_use(args.subnet)
    if used:
        print(
            f"soak refuses to start: {args.subnet} is in use here ({used}); pick --subnet",
            file=sys.stderr,
        )
        return CANNOT_RUN
    folder = STATE_ROOT / f"run-{os.getpid()}"
    folder.mkdir(mode=0o700)
    (folder / "logs").mkdir()
    os.chdir(ROOT)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return run_soak(args, folder)
    except KeyboardInterrupt:
        print("interrupted: everything the soak started is removed", file=sys.stderr)
        return 130
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(Exception):
            remove_leftovers()


if __name__ == "__main__":
    sys.exit(main())
