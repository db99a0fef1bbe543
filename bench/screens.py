"""Screenshots of the run, pair and labelling pages on a phone and a desktop (issue 30).

    PYTHONPATH=. .venv/bin/python bench/screens.py [--out docs/screens]

What it does, start to finish:

1. Makes a throwaway ``EVALSITE_DATA_DIR``, runs ``evalsite migrate --noinput`` there and
   registers examples/support-desk.yaml (its labels come with it).
2. Runs the suite with the fake provider (judged, as ``evalsite run --fake`` does) and adds a
   superuser to look with.
3. Starts the server the way the README does (``evalsite serve``, as bench/pages.py does), logs
   in with Playwright driving Debian's Chromium, and writes the first screen of each page at
   390 × 844 and 1280 × 800 to ``{run,pair,labelling}-{390,1280}.png`` in ``--out``.
4. Stops the server and deletes the data dir, also on errors.

docs/web.md ("Screens") embeds the pictures; run this again after a change of layout.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from pages import Server, free_port, migrate  # noqa: E402 - bench/ is put on the path first

SUITE_FILE = ROOT / "examples" / "support-desk.yaml"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
SCREENS = {"390": {"width": 390, "height": 844}, "1280": {"width": 1280, "height": 800}}
USERNAME = "screens"


def prepare(password: str) -> tuple[str, str, int]:
    """The suite registered, one fake run of it finished, a superuser. Returns (suite name,
    run id, the pk of a pair of it)."""
    from generate_run import setup_django

    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connections

    from evalsite.core.suites import load_suite
    from runs.engine.runner import execute
    from runs.models import Pair, PriceTable, SuiteVersion
    from runs.planning.planner import RunOptions, make_plan, store_plan

    PriceTable.objects.ensure_default()
    user = get_user_model().objects.create_superuser(username=USERNAME, email="", password=password)
    loaded = load_suite(SUITE_FILE)
    version, _ = SuiteVersion.objects.register_file(str(SUITE_FILE), loaded)
    plan = make_plan(version, loaded, RunOptions(fake=True, label="screens"))
    run = execute(store_plan(plan, user=user).id)
    pair = Pair.objects.filter(run=run).order_by("pk").first()
    connections.close_all()
    return version.suite.name, run.id, pair.pk


def shoot(base: str, password: str, pages: dict[str, str], out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    from tests.helpers.browser import log_in

    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        log_in(page, base, USERNAME, password)
        for width, screen in SCREENS.items():
            page.set_viewport_size(screen)
            for name, path in pages.items():
                page.goto(base + path)
                page.wait_for_load_state("networkidle")
                target = out / f"{name}-{width}.png"
                page.screenshot(path=str(target))
                written.append(target)
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screens")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    data_dir = Path(tempfile.mkdtemp(prefix="evalsite-screens-"))
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "EVALSITE_REDIS_URL"}}
    env["EVALSITE_DATA_DIR"] = os.environ["EVALSITE_DATA_DIR"] = str(data_dir)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    password = secrets.token_urlsafe(16)
    server = None
    try:
        migrate(env)
        suite, run_id, pair = prepare(password)
        server = Server(data_dir, env, free_port())
        server.wait_ready()
        pages = {
            "run": f"/runs/{run_id}/",
            "pair": f"/runs/{run_id}/pairs/{pair}/",
            "labelling": f"/label/{suite}/",
        }
        for path in shoot(server.base, password, pages, args.out):
            print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
