"""Issue 28's consistency test: one run of each kind (pairwise with repeats, a matrix with a
variant and a scorecard, one contestant with pass^k, graded), made with scripted replies,
read through every face's real entry point: the CLI summary `evalsite run` prints, `run
--json`, report.json, report.md, the run page (the Django test client), `compare` of the
run against itself, the gate (the exit code and the gate lines) and MCP's `get_run`. Each
face's figures are parsed out of what it shows and compared with report.json's, rounded as
the face rounds them: the same win-rates, intervals, pass rates, pass^k, matrix scores and
gate verdicts everywhere."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.helpers.factories import make_user, run_command, write_scripted_suite

pytestmark = pytest.mark.django_db(transaction=True)

# --- the four runs ---------------------------------------------------------------------------


def _verdicts(winner: str) -> str:
    """Both orders agreeing on `winner` (the judge's JSON, in the two orders it is asked)."""
    shown = {"candidate": ("2", "1"), "baseline": ("1", "2"), "tie": ("tie", "tie")}[winner]
    return json.dumps([json.dumps({"reason": "r", "winner": w}) for w in shown])


def _grade(score: int) -> str:
    return json.dumps(json.dumps({"reasoning": "r", "score": score}))


PAIR_CASES = [f"c{i}" for i in range(8)]  # 8 cases: the win-rate has an interval
PAIR_WINNERS = ["candidate"] * 6 + ["baseline", "tie"]
PAIRWISE = (
    """\
suite: one-pairwise
version: 1
models: [scripted/base, scripted/cand]
judge: {model: scripted/judge}
replies: replies.yaml
repeats: 2
gate: {min_win_rate_lower_bound: 0.3, min_check_pass_rate: 0.9}
tasks:
  - id: t
    prompt: "Say {{w}}"
    checks: [{contains: ok}]
    cases:
"""
    + "".join(f"      - {{id: {c}, vars: {{w: {c}}}}}\n" for c in PAIR_CASES),
    "base:\n"
    + "".join(f"  t/{c}: ['ok {c}', '{'no' if i % 3 == 0 else 'ok'} {c}']\n"
              for i, c in enumerate(PAIR_CASES))
    + "cand:\n"
    + "".join(f"  t/{c}: ['ok {c}', '{'no' if i == 5 else 'ok'} {c}']\n"
              for i, c in enumerate(PAIR_CASES))
    + "judge:\n"
    + "".join(f"  judge/t/{c}: {_verdicts(w)}\n" for c, w in zip(PAIR_CASES, PAIR_WINNERS, strict=True))
)  # fmt: skip

MATRIX = (
    """\
suite: one-matrix
version: 1
models: [scripted/good, scripted/good@short, scripted/sloppy]
replies: replies.yaml
variants:
  short: {system: "Be brief."}
scorecard:
  - {criterion: format, weight: 1, scorer: schema}
  - {criterion: content, weight: 3, scorer: checks}
gate:
  min_score: 0.6
  min_pass_rate: {scripted/good: 0.5}
tasks:
  - id: extract
    judge: false
    prompt: "JSON for {{x}}"
    schema: {type: object, required: [x]}
    checks: [{contains: '"x"'}]
    cases:
      - {id: one, vars: {x: one}}
      - {id: two, vars: {x: two}}
      - {id: three, vars: {x: three}}
""",
    """\
good:
  extract/one: ['{"x": 1}']
  extract/two: ['{"x": 2}']
  extract/three: ['{"y": 3}']
sloppy:
  extract/one: ['{"x": 1}']
  extract/two: [nope]
  extract/three: ['{"y": "x"}']
""",
)

PASS_K = (
    """\
suite: one-passk
version: 1
models: [scripted/solo]
replies: replies.yaml
repeats: 3
gate: {min_pass_all_rate: 0.75, min_check_pass_rate: 0.5}
tasks:
  - id: greet
    prompt: "Greet {{n}}"
    cases:
      - {id: ana, vars: {n: Ana}, checks: [{contains: Ana}]}
      - {id: bo, vars: {n: Bo}, checks: [{contains: Bo}]}
      - {id: cy, vars: {n: Cy}, checks: [{contains: Cy}]}
      - {id: di, vars: {n: Di}, checks: [{contains: Di}]}
""",
    """\
solo:
  greet/ana: [Hi Ana, Hi Ana, Hi Ana]
  greet/bo: [Hi Bo, Hello, Hi Bo]
  greet/cy: [Hey, Hey, Hi Cy]
  greet/di: [Hi Di, Hi Di, Hi Di]
""",
)

GRADED = (
    """\
suite: one-graded
version: 1
models: [scripted/base, scripted/cand]
judge: {model: scripted/judge}
replies: replies.yaml
repeats: 2
gate: {min_pass_rate: 0.6}
tasks:
  - id: answer
    judge: false
    prompt: "Answer {{q}}"
    checks: [{min_chars: 1}]
    grade: {rubric: "Is correct.", threshold: 0.5}
    cases:
      - {id: a, vars: {q: one}}
      - {id: b, vars: {q: two}}
      - {id: c, vars: {q: three}}
""",
    f"""\
base:
  answer/a: [one, one]
  answer/b: [two, too]
  answer/c: [tree, tree]
cand:
  answer/a: [one, one]
  answer/b: [two, two]
  answer/c: [three, tree]
judge:
  grade/answer/a: [{_grade(5)}]
  grade/answer/b: [{_grade(4)}, {_grade(2)}]
  grade/answer/c: [{_grade(1)}, {_grade(5)}]
""",
)

KINDS = {"pairwise": PAIRWISE, "matrix": MATRIX, "pass_k": PASS_K, "graded": GRADED}


# --- every face of one run, read once per kind -----------------------------------------------

_FACES: dict[str, dict[str, Any]] = {}


def _faces(kind: str, tmp_path: Path) -> dict[str, Any]:
    """What each face shows of the kind's run, as text or parsed JSON: the run is made once
    per kind (its figures are cached here; the database is not kept between tests)."""
    if kind in _FACES:
        return _FACES[kind]
    from evalsite.mcp import server

    suite = write_scripted_suite(tmp_path, *KINDS[kind])
    code, summary, err = run_command("run", str(suite))
    assert code in (0, 1), err
    json_code, printed, err = run_command("run", str(suite), "--json")
    assert json_code == code, err
    run_id = re.search(r"^run (\S+)", summary, re.M).group(1)
    folder = Path(re.search(r"^  report: (.+)/report\.md$", summary, re.M).group(1))
    client = Client()
    client.force_login(make_user())
    page = client.get(reverse("run_detail", args=[run_id]))
    assert page.status_code == 200
    faces = {
        "run_id": run_id,
        "exit": code,
        "summary": summary,
        "json": json.loads(printed),
        "report": json.loads((folder / "report.json").read_text()),
        "md": (folder / "report.md").read_text(),
        "answers": [json.loads(line) for line in (folder / "answers.jsonl").open()],
        "page": page.content.decode(),
        "compare": run_command("compare", run_id, run_id, "--fail-on-regression", "0"),
        "compare_json": run_command("compare", run_id, run_id, "--json"),
        "compare_cases": run_command("compare", run_id, run_id, "--cases"),
        "mcp": server.get_run(run_id).structured_content,
    }
    _FACES[kind] = faces
    return faces


@pytest.fixture(params=list(KINDS))
def kind(request) -> str:
    return request.param


@pytest.fixture
def faces(kind, tmp_path) -> dict[str, Any]:
    return _faces(kind, tmp_path)


# --- the figures, as report.json holds them and as each face rounds them ----------------------


def r3(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f}"


def shown(cell: str) -> str | None:
    """A printed rate: "n/a" is the face's word for no rate (None in report.json)."""
    return None if cell == "n/a" else cell


def report_figures(report: dict[str, Any]) -> dict[str, Any]:
    """The figures every face should agree on, from a report (report.json or --json)."""
    per = report["per_contestant"]
    figures: dict[str, Any] = {
        "win": {
            name: (
                r3(rate["win_rate"]),
                tuple(r3(x) for x in rate["ci"] or ()),
                rate["cases"],
                rate["n"],
            )
            for name, rate in report["win_rates"].items()
            if rate["n"]  # a candidate with no judged pair shows no win-rate
        },  # fmt: skip
        "schema": {name: r3(one["schema"]["rate"]) for name, one in per.items()},
        "checks": {name: r3(one["checks"]["rate"]) for name, one in per.items()},
        "matrix": {
            (cell["model"], cell["variant"] or "(base)"): (
                r3(cell["score"]),
                cell["passed"],
                cell["scored"],
            )
            for cell in report["matrix"]["cells"]
        },
        "gates": {(g["gate"], g["subject"]): g["status"] for g in report["gates"]},
        "gates_passed": report["gates_passed"],
    }
    if report["repeats"] > 1:
        figures["pass_k"] = {
            name: (one["pass_k"]["k"], r3(one["pass_k"]["pass_all_rate"]),
                   r3(one["pass_k"]["pass_any_rate"]), one["pass_k"]["cases"])
            for name, one in per.items()
        }  # fmt: skip
    return figures


def _columns(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def cli_table(text: str, *headers: str) -> dict[str, dict[str, str]]:
    """The CLI's table whose header line starts with `headers`: {first column: {header:
    cell}} (a matrix row is keyed `model variant`)."""
    lines, first = text.splitlines(), headers[0]
    (start,) = [i for i, line in enumerate(lines) if _columns(line)[: len(headers)] == [*headers]]
    header = _columns(lines[start])
    indent = len(lines[start]) - len(lines[start].lstrip())
    rows = {}
    for line in lines[start + 1 :]:
        if len(line) - len(line.lstrip()) != indent or len(_columns(line)) != len(header):
            break  # the table ends where a line is not one of its rows
        cells = dict(zip(header, _columns(line), strict=True))
        key = cells[first] + (f" {cells['variant']}" if "variant" in cells else "")
        rows[key] = cells
    return rows


def md_tables(text: str) -> list[list[list[str]]]:
    """report.md's tables, each a list of rows of cell text (the header row first)."""
    tables, rows = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [cell.strip().strip("`") for cell in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r"-+", cell) for cell in cells):
                rows.append(cells)
        elif rows:
            tables.append(rows)
            rows = []
    return tables


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._depth = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
            self._depth += 1
        elif tag == "tr" and self._depth:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self._depth:
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag):
        if tag == "table":
            self._depth -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(re.sub(r"\s+", " ", "".join(self._cell)).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_tables(html: str) -> list[list[list[str]]]:
    parser = _Tables()
    parser.feed(html)
    return parser.tables


def table_with(tables: list[list[list[str]]], *headers: str) -> list[dict[str, str]]:
    """The one table whose header row has every one of `headers`, as {header: cell} rows."""
    found = [t for t in tables if t and all(h in t[0] for h in headers)]
    assert found, f"no table with {headers}"
    rows = found[0]
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def _number(cell: str) -> str:
    return re.match(r"[0-9.]+", cell).group(0)


def _interval(cell: str) -> tuple[str, ...]:
    found = re.search(r"\[([0-9.]+), ([0-9.]+)\]", cell)
    return found.groups() if found else ()


def _cases_pairs(cell: str) -> tuple[int, int]:
    cases, pairs = re.search(r"(\d+) cases \((\d+) pairs\)", cell).groups()
    return int(cases), int(pairs)


def matrix_from_rows(rows: list[dict[str, str]]) -> dict[tuple[str, str], tuple]:
    figures = {}
    for row in rows:
        passed, scored = row["pass/scored"].split("/")
        figures[row["model"], row["variant"]] = (
            _number(row["score"]), int(passed), int(scored)
        )  # fmt: skip
    return figures


def win_from_rows(rows: list[dict[str, str]], n_column: str) -> dict[str, tuple]:
    figures = {}
    for row in rows:
        if row[n_column] == "0 cases":
            continue  # no judged pair: no win-rate
        cases, pairs = _cases_pairs(row[n_column])
        figures[row["candidate"]] = (
            _number(row["win-rate"]), _interval(row["interval"]), cases, pairs
        )  # fmt: skip
    return figures


def gates_from_rows(rows: list[dict[str, str]]) -> dict[tuple[str, str], str]:
    return {(row["gate"], row["figure"].split(":")[0]): row["status"].lower() for row in rows}


# --- the parts -------------------------------------------------------------------------------


def test_run_json_prints_the_figures_report_json_holds(faces):
    assert report_figures(faces["json"]) == report_figures(faces["report"])
    assert faces["json"]["gates_passed"] == faces["report"]["gates_passed"]


def test_the_cli_summary_prints_report_json_s_figures(faces):
    want, summary = report_figures(faces["report"]), faces["summary"]
    table = cli_table(summary, "contestant")
    assert {name: shown(row["schema"]) for name, row in table.items()} == want["schema"]
    assert {name: shown(row["checks"]) for name, row in table.items()} == want["checks"]
    matrix = cli_table(summary, "model", "variant")
    assert {tuple(key.split(" ")): None for key in matrix} == dict.fromkeys(want["matrix"])
    rows = [cells | {"model": key.split(" ")[0]} for key, cells in matrix.items()]
    assert matrix_from_rows(rows) == want["matrix"]
    win = {}
    for line in re.findall(r"^  (\S+) vs \S+: win-rate (.*)$", summary, re.M):
        name, rest = line
        cases, pairs = re.search(r"n=(\d+) cases \((\d+) pairs\)", rest).groups()
        win[name] = (_number(rest), _interval(rest), int(cases), int(pairs))
    assert win == want["win"]


def test_the_cli_summary_prints_pass_k_for_each_contestant(kind, faces):
    want = report_figures(faces["report"]).get("pass_k")
    if want is None:
        pytest.skip("one answer per case: no pass^k")
    shown = {
        name: (int(k), r3(int(all_) / int(cases)), r3(int(any_) / int(cases2)), int(cases))
        for name, k, all_, cases, any_, cases2 in re.findall(
            r"^  (\S+): pass\^(\d+) (\d+)/(\d+), pass@\d+ (\d+)/(\d+)", faces["summary"], re.M
        )
    }
    assert shown == want


def test_the_gate_is_the_exit_code_and_the_summary_s_gate_lines(faces):
    report = faces["report"]
    want = report_figures(report)["gates"]
    assert want, "every run here has a gate"
    assert faces["exit"] == (0 if report["gates_passed"] else 1)
    assert report["gates_passed"] == all(status == "passed" for status in want.values())
    failed = {
        (gate, subject)
        for gate, subject in re.findall(r"^  gate failed: (\S+) - ([^:]+):", faces["summary"], re.M)
    }
    assert failed == {key for key, status in want.items() if status == "failed"}
    if not failed:
        assert f"gates: {len(want)} passed" in faces["summary"]


def test_report_md_holds_report_json_s_figures(faces):
    want, tables = report_figures(faces["report"]), md_tables(faces["md"])
    assert matrix_from_rows(table_with(tables, "model", "variant", "score")) == want["matrix"]
    assert gates_from_rows(table_with(tables, "status", "gate", "figure")) == want["gates"]
    if want["win"]:
        assert win_from_rows(table_with(tables, "candidate", "win-rate"), "n") == want["win"]
    scorecard = table_with(tables, "")  # contestants across, measures down
    rows = {row[""]: row for row in scorecard}
    contestants = [key for key in scorecard[0] if key]
    shown = {c.split(" ")[0].strip("`"): _number(rows["check pass"][c]) for c in contestants}
    assert shown == want["checks"]
    if "pass_k" in want:
        passk = {}
        for c in contestants:
            cell = rows["pass^k / pass@k"][c]
            k, all_ = re.search(r"pass\^(\d+) ([0-9.]+)", cell).groups()
            any_ = re.search(r"pass@\d+ ([0-9.]+)", cell).group(1)
            cases = re.search(r"\(n=(\d+) cases\)", cell).group(1)
            passk[c.split(" ")[0].strip("`")] = (int(k), all_, any_, int(cases))
        assert passk == want["pass_k"]


def test_the_run_page_shows_report_json_s_figures(faces):
    want, tables = report_figures(faces["report"]), html_tables(faces["page"])
    assert matrix_from_rows(table_with(tables, "model", "variant", "score")) == want["matrix"]
    assert gates_from_rows(table_with(tables, "status", "gate", "figure")) == want["gates"]
    if want["win"]:
        card = table_with(tables, "candidate", "vs baseline", "win-rate")
        assert win_from_rows(card, "n") == want["win"]
    failed = set(re.findall(r"gate failed</span> <code>([^<]+)</code>: ([^:<]+):", faces["page"]))
    assert failed == {key for key, status in want["gates"].items() if status == "failed"}


def test_compare_against_itself_finds_no_change_and_the_run_s_figures(faces):
    want = report_figures(faces["report"])
    code, text, err = faces["compare"]
    assert code == 0, text + err
    code, printed, err = faces["compare_json"]
    assert code == 0, err
    compared = json.loads(printed)
    assert compared["comparable"] is True
    for measure, key in (("schema_pass", "schema"), ("check_pass", "checks")):
        rows = {row["name"]: (r3(row["before"]), r3(row["after"]), row["delta"])
                for row in compared[measure]}  # fmt: skip
        shown = {name: (rate, rate, 0.0) for name, rate in want[key].items() if rate is not None}
        assert rows == shown  # no line for a rate neither run has
    win = {
        row["name"]: (r3(row["before"]), r3(row["after"]))
        for row in compared["win_rates"]
        if (row["before"], row["after"]) != (None, None)  # no judged pair: no win-rate
    }
    assert win == {name: (rate[0], rate[0]) for name, rate in want["win"].items()}


def test_compare_against_itself_shows_every_measure_of_the_run(kind, faces):
    want = report_figures(faces["report"])
    _, text, _ = faces["compare"]
    for (model, variant), (score, _, _) in want["matrix"].items():
        name = model if variant == "(base)" else f"{model}@{variant}"
        criteria = (faces["report"].get("scorecard") or {}).get("criteria")
        measure = "scorecard score" if criteria else "pass rate"
        assert f"  {measure} {name}: {score} → {score} (+0.000)" in text, name
    for name, (k, all_rate, _, _) in want.get("pass_k", {}).items():
        assert f"  pass^{k} {name}: {all_rate} → {all_rate} (+0.000)" in text, name


def test_compare_cases_counts_the_passed_attempts_pass_k_counts(kind, faces):
    code, text, err = faces["compare_cases"]
    assert code == 0, text + err
    head = text.index("\nCASE ")
    rows = re.findall(r"^(\S+ )?(\S+)\s+(\d+)/(\d+)\s+(\d+)/(\d+)\s+(\w+)$", text[head:], re.M)
    assert rows and all(vs == "same" for *_, vs in rows)
    only = faces["report"]["contestants"][0]  # one contestant: its rows name only the case
    passed = {
        ((name.strip() or only), case): (int(old), int(total))
        for name, case, old, total, *_ in rows
    }
    for name, figures in report_figures(faces["report"]).get("pass_k", {}).items():
        k, all_rate, any_rate, cases = figures
        mine = [n for (who, _), (n, _) in passed.items() if who == name]
        assert r3(sum(n == k for n in mine) / cases) == all_rate, name
        assert r3(sum(n > 0 for n in mine) / cases) == any_rate, name
    answers = faces["answers"]
    for (model, variant), (_, passed_count, scored) in report_figures(faces["report"])[
        "matrix"
    ].items():
        name = model if variant == "(base)" else f"{model}@{variant}"
        mine = [a for a in answers if a["contestant"] == name and a["status"] == "done"]
        assert (sum(a["passed"] for a in mine), len(mine)) == (passed_count, scored), name


def test_mcp_get_run_gives_the_win_rates(faces):
    want = report_figures(faces["report"])["win"]
    rates = faces["mcp"]["win_rates"]
    shown = {
        name: (r3(rate["win_rate"]), tuple(r3(x) for x in rate["ci"] or ()), rate["cases"],
               rate["n"])
        for name, rate in rates.items()
        if rate["n"]
    }  # fmt: skip
    assert shown == want


def test_mcp_get_run_gives_the_scores(kind, faces):
    """The same summary the CLI's --json prints: its figures read as report.json's are."""
    want, mcp = report_figures(faces["report"]), faces["mcp"]
    assert "per_contestant" in mcp and "matrix" in mcp, sorted(mcp)
    shown = report_figures(mcp | {"win_rates": {}, "gates": [], "gates_passed": None})
    for part in ("schema", "checks", "matrix", "pass_k"):
        assert shown.get(part) == want.get(part), part


def test_mcp_get_run_gives_the_gate_verdicts(kind, faces):
    want, mcp = report_figures(faces["report"]), faces["mcp"]
    assert "gates" in mcp, sorted(mcp)
    assert {(g["gate"], g["subject"]): g["status"] for g in mcp["gates"]} == want["gates"]
    assert mcp["gates_passed"] is want["gates_passed"]
