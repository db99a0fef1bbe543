"""Issue 6, "done when": the whole flow in a browser against the real server, started the way
the README starts it — log in, launch a fake run of the demo suite from the form, watch it
finish, read the calibration before the win-rates, open a pair, record a decision, compare
with an earlier run, and find the decision in the log."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import EVALSITE, ROOT, PageWatch, Served, log_in, server_env

DEFAULTS = ("anthropic/claude-haiku-4-5", "google/gemini-2.5-flash")
REASONING = "Kappa is below the floor: label more pairs before switching models."


@pytest.fixture
def served(tmp_path):
    """An earlier finished run of the demo suite from the command line, then `serve` on the
    same fresh data dir."""
    data = tmp_path / "data"
    earlier = subprocess.run(
        [str(EVALSITE), "run", "examples/support-desk.yaml", "--fake"],
        cwd=ROOT,
        env=server_env(data),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert earlier.returncode == 0, earlier.stdout + earlier.stderr
    earlier_id = re.match(r"run (\S+)\s+\(support-desk\)", earlier.stdout).group(1)
    server = Served(data)
    try:
        yield server, earlier_id
    finally:
        server.kill()


def test_launch_watch_read_review_decide_and_compare_in_the_browser(served, chromium):
    server, earlier_id = served
    server.wait_for(r"serving on http://127\.0\.0\.1:")
    password = server.wait_for(r"password: (\S+)").group(1)
    assert "username: admin" in server.output
    base = server.url

    page = chromium.new_page()
    watch = PageWatch(page, base)
    polls: list[str] = []
    page.on("request", lambda r: "part=progress" in r.url and polls.append(r.url))
    try:
        # log in with the printed credentials
        log_in(page, base, "admin", password)

        # the demo suite's page, from the dashboard
        page.get_by_role("link", name="support-desk", exact=True).click()
        page.wait_for_url(f"{base}/suites/support-desk/")
        expect(page.locator("h1")).to_have_text("support-desk")

        # the new-run form: the suite's default contestants ticked, fake answers on
        form = page.locator("#new-run form")
        for model in DEFAULTS:
            box = form.get_by_label(model, exact=True)
            if not box.is_checked():
                box.check()
            expect(box).to_be_checked()
        form.get_by_label("Fake answers", exact=False).check()
        estimate = page.locator("#run-estimate")
        expect(estimate).to_contain_text("Estimate:", timeout=15_000)
        expect(estimate).to_contain_text(DEFAULTS[0])
        form.get_by_role("button", name="Launch run").click()
        page.wait_for_url(re.compile(rf"^{re.escape(base)}/runs/[^/]+/$"))
        run_id = page.url.rstrip("/").rsplit("/", 1)[1]
        assert run_id != earlier_id
        run_url = f"{base}/runs/{run_id}/"

        # the run is live: the progress partial polls until the page reloads with the report
        # (the worker polls the queue every 0.5 s, so the run cannot have ended yet)
        expect(page.locator("#run-progress[hx-get]")).to_contain_text("Progress")
        expect(page.locator("#calibration")).to_have_count(0)
        page.wait_for_selector("#calibration", timeout=90_000)
        assert polls, "the progress partial never polled"
        expect(page.locator("#run-progress")).to_contain_text("Finished")
        order = page.evaluate(
            """() => {
              const cal = document.getElementById('calibration');
              const win = document.getElementById('win-rates');
              return !!(cal && win &&
                        cal.compareDocumentPosition(win) & Node.DOCUMENT_POSITION_FOLLOWING);
            }"""
        )
        assert order, "the calibration section must come before the win-rates section"
        expect(page.locator("#win-rates")).to_contain_text("UNCALIBRATED")
        expect(page.locator("#calibration")).to_contain_text("below_floor")

        # the pairs browser, then one judged pair side by side
        page.locator("p.links").get_by_role("link", name="Pairs", exact=True).click()
        page.wait_for_url(f"{run_url}pairs/")
        judged = page.locator("#pair-results tbody tr").filter(has_not_text="excluded").first
        task_case = judged.locator("td code").first.inner_text()
        judged.get_by_role("link", name="open").click()
        page.wait_for_url(re.compile(rf"{re.escape(run_url)}pairs/\d+/$"))
        expect(page.locator("h1")).to_contain_text(task_case)
        answers = page.locator("section.answer")
        expect(answers).to_have_count(2)
        expect(answers.nth(0)).to_contain_text(f"Baseline {DEFAULTS[0]}")
        expect(answers.nth(1)).to_contain_text(f"Candidate {DEFAULTS[1]}")
        for side in range(2):
            assert answers.nth(side).locator("pre").inner_text().strip()
        verdicts = page.locator("article.verdict")
        expect(verdicts).to_have_count(2)
        for order_no in range(2):
            expect(verdicts.nth(order_no)).to_contain_text(f"Order {order_no + 1}")
            expect(verdicts.nth(order_no)).to_contain_text("winner:")

        # back to the run page through its links; record a decision
        page.get_by_role("link", name=re.compile(r"Pairs of")).click()
        page.wait_for_url(f"{run_url}pairs/")
        page.get_by_role("link", name=re.compile(r"← Run")).click()
        page.wait_for_url(run_url)
        decisions = page.locator("#run-decisions")
        expect(decisions).to_contain_text("No decision recorded")
        decisions.get_by_label("needs more evidence").click()
        decisions.locator("textarea").click()
        page.keyboard.type(REASONING)
        decisions.get_by_role("button", name="Record decision").click()
        recorded = page.locator("#run-decisions article.decision")
        expect(recorded).to_have_count(1)
        expect(recorded).to_contain_text("needs more evidence")
        expect(recorded).to_contain_text("admin")
        expect(recorded.locator("pre")).to_have_text(REASONING)

        # compare with the earlier run from the command line
        page.get_by_role("link", name="Compare with the previous run").click()
        page.wait_for_url(re.compile(rf"/compare/\?a={earlier_id}&b={run_id}$"))
        heading = page.locator("section.card h2")
        expect(heading).to_contain_text(earlier_id)
        expect(heading).to_contain_text(run_id)
        expect(page.get_by_role("heading", name="Win-rates")).to_be_visible()
        rates = page.locator("section.card table.grid").first
        expect(rates).to_contain_text(DEFAULTS[1])

        # the decision log lists it, linking to the run
        page.locator("nav[aria-label=Main]").get_by_role("link", name="Decisions").click()
        page.wait_for_url(f"{base}/decisions/")
        row = page.locator("tbody tr").filter(has=page.locator(f"a[href*='{run_id}']"))
        expect(row).to_have_count(1)
        expect(row).to_contain_text("needs more evidence")
        expect(row).to_contain_text(REASONING)
        row.locator(f"a[href*='{run_id}']").first.click()
        page.wait_for_url(run_url)
        expect(page.locator("#run-decisions article.decision")).to_have_count(1)

        assert watch.problems == []
    finally:
        page.close()

    # Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops serve
    assert server.interrupt(timeout=40) == 0, server.output
    assert "evalsite stopped." in server.output


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process on the machine."""
    listing = subprocess.run(
        ["ps", "-e", "-o", "pid=,ppid=,stat=,args="], capture_output=True, text=True
    ).stdout
    rows = (line.split(None, 3) for line in listing.splitlines() if line.strip())
    return {int(pid): (int(ppid), stat, args) for pid, ppid, stat, args in rows}


def _worker_tree(serve_pid: int, timeout: float = 30) -> tuple[int, int, list[int]]:
    """(worker, django-q2 sentinel, the sentinel's children) under serve, once the cluster
    is up (its pusher, monitor and workers started)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = _processes()
        for worker, (ppid, _, args) in procs.items():
            if ppid != serve_pid or "evalsite worker" not in args:
                continue
            for sentinel in (pid for pid, row in procs.items() if row[0] == worker):
                children = [pid for pid, row in procs.items() if row[0] == sentinel]
                if len(children) >= 3:
                    return worker, sentinel, children
        time.sleep(0.2)
    raise RuntimeError("the worker's django-q2 cluster never started under serve")


def _alive(pids: list[int]) -> dict[int, tuple[int, str, str]]:
    procs = _processes()
    return {pid: procs[pid] for pid in pids if pid in procs and not procs[pid][1].startswith("Z")}


def test_ctrl_c_stops_every_worker_process_even_when_the_cluster_is_slow_to_wake(tmp_path):
    """A Ctrl-C on a busy machine: the worker's cluster sentinel is slow to be scheduled
    (held with SIGSTOP for one second) while the worker gets the terminal's SIGINT and then
    serve's SIGTERM. Every process serve started must be gone soon after serve exits."""
    server = Served(tmp_path / "data")
    tree: list[int] = []
    try:
        try:
            server.wait_for(r"serving on http://127\.0\.0\.1:")
        except AssertionError as error:  # not the failure this test expects
            raise RuntimeError(str(error)) from None
        worker, sentinel, children = _worker_tree(server.process.pid)
        tree = [worker, sentinel, *children]
        os.kill(sentinel, signal.SIGSTOP)  # not scheduled yet
        try:
            os.kill(worker, signal.SIGINT)  # the terminal's SIGINT reaches the worker first
            time.sleep(0.5)
            os.killpg(server.process.pid, signal.SIGINT)  # ... and serve, which sends SIGTERM
            interrupted = time.monotonic()
            time.sleep(0.5)
        finally:
            os.kill(sentinel, signal.SIGCONT)
        assert server.process.wait(timeout=40) == 0, server.output
        took = time.monotonic() - interrupted
        deadline = time.monotonic() + 5
        while _alive(tree) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _alive(tree)
        assert not left, f"serve exited after {took:.0f} s; these outlived it: {left}"
        assert took < 15, f"serve took {took:.0f} s to stop"
    finally:
        for pid in _alive(tree):
            os.kill(pid, signal.SIGKILL)
        server.kill()
