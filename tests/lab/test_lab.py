"""The judge lab (SPEC §10.5): pair sets in through the command and the page, judges run over
them through the engine, and every figure of `evalsite pairs report --json` checked against
scikit-learn, statsmodels and krippendorff on two real public pair sets, computed here from
the JSONL rows and not through the lab's code."""

from __future__ import annotations

import io
import json
import math
import warnings
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client, TestCase, override_settings
from django.urls import include, path, reverse

from evalsite import urls as site_urls
from evalsite.core.judging import PROMPT_VERSION
from lab.models import PairSet, PairSetItem, PairSetJudgeRun
from runs.models import Answer, CachedResponse, Judgement, PriceTable, Run, Suite, SuiteVersion
from runs.planning.launch import MAX_SHARDS
from tests.helpers.factories import make_user
from tests.helpers.references import (
    aggregate_raters,
    cohen_kappa_score,
    krippendorff,
    statsmodels_fleiss,
    statsmodels_kappa,
)

REPO = Path(__file__).resolve().parents[2]
# The two real public pair sets of ../shared/data/pairsets, kept in the repository (with
# their README: sources and licences) so a fresh clone tests against them.
SHARED = REPO / "tests" / "fixtures" / "pairsets"
LABELS = ["a", "b", "tie"]
SCORE = {"a": 0.0, "b": 1.0, "tie": 0.5}
HTMX = {"HTTP_HX_REQUEST": "true"}
STORED = (Suite, SuiteVersion, Run, Answer, Judgement, CachedResponse, PairSetJudgeRun)
BANDS = ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"))

# The lab's pages with the site's, wherever the site's urls.py mounts them (or not yet).
urlpatterns = [*site_urls.urlpatterns, path("lab/", include("lab.urls"))]


def cli(*args: str) -> tuple[int, str, str]:
    """`evalsite pairs …` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("pairs", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as stop:
        code = int(stop.code)
    return code, out.getvalue(), err.getvalue()


def shared_file(name: str) -> Path:
    found = SHARED / name
    if not found.is_file():
        pytest.fail(
            f"the shared pair sets are missing: {found.resolve()} does not exist (copies of "
            "../shared/data/pairsets, see tests/fixtures/pairsets/README.md)."
        )
    return found


def jsonl_rows(file: Path) -> list[dict]:
    return [json.loads(line) for line in file.read_text("utf-8").splitlines() if line.strip()]


# --- reference figures, straight from the rows ----------------------------------------------


def majority(votes: list[dict]) -> str | None:
    counts = Counter(vote["prefer"] for vote in votes)
    if not counts:
        return None
    top, count = counts.most_common(1)[0]
    return top if count * 2 > len(votes) else None


def landis_koch(kappa: float) -> str:
    if kappa < 0:
        return "poor"
    for bound, band in BANDS:
        if kappa <= bound:
            return band
    return "almost perfect"


def assert_kappa_matches_references(actual: dict, humans: list[str], judge: list[str]) -> None:
    """Every key of one view ({n, kappa, kappa_ci, se, band, agreement, confusion})."""
    assert set(actual) == {"n", "kappa", "kappa_ci", "se", "band", "agreement", "confusion"}
    assert actual["n"] == len(humans)
    table = np.zeros((3, 3), dtype=int)
    for h, j in zip(humans, judge, strict=True):
        table[LABELS.index(h), LABELS.index(j)] += 1
    assert actual["confusion"] == table.tolist()
    if not humans:
        assert [actual[k] for k in ("kappa", "kappa_ci", "se", "band", "agreement")] == [None] * 5
        return
    agreement = np.mean(np.array(humans) == np.array(judge))
    assert actual["agreement"] == pytest.approx(agreement, abs=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = float(cohen_kappa_score(humans, judge, labels=LABELS))
        reference = statsmodels_kappa(table)
    if math.isnan(expected):
        assert actual["kappa"] is None and actual["band"] is None
        return
    assert actual["kappa"] == pytest.approx(expected, abs=1e-6)
    assert actual["band"] == landis_koch(expected)
    assert actual["se"] == pytest.approx(reference.std_kappa, abs=1e-6)
    low, high = max(-1.0, reference.kappa_low), min(1.0, reference.kappa_upp)
    assert actual["kappa_ci"] == pytest.approx([low, high], abs=1e-6)


def assert_judge_matches_references(actual: dict, rows: list[dict], name: str) -> None:
    humans = {row["id"]: majority(row["votes"]) for row in rows}
    orders: dict[int, dict[str, str]] = {1: {}, 2: {}}
    for row in rows:
        for verdict in row["judge"]:
            if verdict["judge"] == name:
                orders[verdict["order"]][row["id"]] = verdict["prefer"]
    both = [pair for pair in orders[1] if pair in orders[2]]
    combined, flips = {}, 0
    for pair in both:
        first, second = orders[1][pair], orders[2][pair]
        score = (SCORE[first] + SCORE[second]) / 2
        combined[pair] = "b" if score > 0.5 else "a" if score < 0.5 else "tie"
        flips += {first, second} == {"a", "b"}
    for view, verdicts in (("order1", orders[1]), ("order2", orders[2]), ("combined", combined)):
        labelled = [pair for pair in verdicts if humans[pair] is not None]
        judged = [verdicts[pair] for pair in labelled]
        assert_kappa_matches_references(actual[view], [humans[p] for p in labelled], judged)
    counts = {"order1": len(orders[1]), "order2": len(orders[2]), "both": len(both)}
    assert actual["verdicts"] == counts
    assert actual["flips"] == flips
    if both:
        assert actual["flip_rate"] == pytest.approx(flips / len(both), abs=1e-6)
    else:
        assert actual["flip_rate"] is None


def assert_humans_match_references(actual: dict, rows: list[dict]) -> None:
    labellers = sorted({vote["labeller"] for row in rows for vote in row["votes"]})
    by_item = [{vote["labeller"]: vote["prefer"] for vote in row["votes"]} for row in rows]
    pairwise, pairwise_n = {}, {}
    for x, y in combinations(labellers, 2):
        common = [item for item in by_item if x in item and y in item]
        if common:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = float(cohen_kappa_score([i[x] for i in common], [i[y] for i in common],
                                                labels=LABELS))  # fmt: skip
            pairwise[f"{x}~{y}"], pairwise_n[f"{x}~{y}"] = value, len(common)
    assert actual["pairwise"] == pytest.approx(pairwise, abs=1e-6)
    assert actual["pairwise_n"] == pairwise_n
    assert actual["labellers"] == labellers
    multiple = [item for item in by_item if len(item) >= 2]
    assert actual["multiply_labelled"] == len(multiple)
    agreed = [majority(row["votes"]) for row in rows if row["votes"]]
    assert actual["consensus"] == sum(1 for a in agreed if a is not None)
    assert actual["no_majority"] == sum(1 for a in agreed if a is None)
    assert actual["unlabelled"] == sum(1 for row in rows if not row["votes"])
    if not multiple:
        assert actual["fleiss_kappa"] is None and actual["krippendorff_alpha"] is None
        return
    codes = {label: index for index, label in enumerate(LABELS)}
    units = np.full((len(labellers), len(multiple)), np.nan)
    for column, item in enumerate(multiple):
        for labeller, prefer in item.items():
            units[labellers.index(labeller), column] = codes[prefer]
    alpha = krippendorff.alpha(reliability_data=units, level_of_measurement="nominal")
    assert actual["krippendorff_alpha"] == pytest.approx(alpha, abs=1e-6)
    three = [[codes[p] for p in item.values()] for item in multiple if len(item) == 3]
    assert len(three) == len(multiple), "Fleiss is checked on sets with three votes a pair"
    fleiss = statsmodels_fleiss(aggregate_raters(np.array(three))[0])
    assert actual["fleiss_kappa"] == pytest.approx(fleiss, abs=1e-6)


# --- the two real pair sets --------------------------------------------------------------------


@override_settings(ROOT_URLCONF=__name__)
class SharedPairSetTests(TestCase):
    """PandaLM's test set (three annotators a pair; two judges, order 1) and LLMBar's
    MT-Bench subset (one expert consensus a pair; four judges in both orders)."""

    FILES = {"pandalm-testset": "pandalm-testset.jsonl", "llmbar-mtbench": "llmbar-mtbench.jsonl"}

    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.rows, cls.reports, cls.import_output = {}, {}, {}
        for name, file in cls.FILES.items():
            source = shared_file(file)
            cls.rows[name] = jsonl_rows(source)
            cls.import_output[name] = cli("import", str(source))
            code, out, err = cli("report", name, "--json")
            assert code == 0, err
            cls.reports[name] = json.loads(out)

    def test_both_files_import_under_their_names(self):
        pandalm, llmbar = (
            self.import_output["pandalm-testset"],
            self.import_output["llmbar-mtbench"],
        )
        assert pandalm[:2] == (0, "imported 999 pairs as pandalm-testset\n")
        assert llmbar[:2] == (0, "imported 200 pairs as llmbar-mtbench\n")
        # Six PandaLM answers are JSON `true`: kept as the text "true", each with a warning.
        warned = self.import_output["pandalm-testset"][2]
        assert warned.count("warning: a boolean true is not text") == 6
        assert "pandalm-testset.jsonl:158: answer_a:" in warned
        item = PairSetItem.objects.get(pairset__name="pandalm-testset", pair_id="157")
        assert (item.answer_a, item.answer_b) == ("true", "True.")

    def test_votes_and_verdicts_are_stored_exactly_as_given(self):
        for name, rows in self.rows.items():
            stored = {
                item.pair_id: (item.votes, item.verdicts)
                for item in PairSetItem.objects.filter(pairset__name=name)
            }
            assert stored == {row["id"]: (row["votes"], row["judge"]) for row in rows}

    def test_the_report_has_the_keys_of_spec_10_5(self):
        for name, report in self.reports.items():
            assert set(report) == {"name", "pairs", "humans", "judges"}
            assert report["name"] == name and report["pairs"] == len(self.rows[name])
            assert {"pairwise", "fleiss_kappa", "krippendorff_alpha"} <= set(report["humans"])
            for judge in report["judges"].values():
                assert set(judge) == {
                    "order1", "order2", "combined", "verdicts", "flips", "flip_rate", "source",
                    "cost_usd",
                }  # fmt: skip
                assert (judge["source"], judge["cost_usd"]) == ("imported", None)

    def test_every_judge_figure_matches_scikit_learn_and_statsmodels(self):
        for name, report in self.reports.items():
            rows = self.rows[name]
            names = {verdict["judge"] for row in rows for verdict in row["judge"]}
            assert set(report["judges"]) == names
            for judge, figures in report["judges"].items():
                with self.subTest(pairset=name, judge=judge):
                    assert_judge_matches_references(figures, rows, judge)

    def test_every_human_figure_matches_scikit_learn_statsmodels_and_krippendorff(self):
        for name, report in self.reports.items():
            with self.subTest(pairset=name):
                assert_humans_match_references(report["humans"], self.rows[name])

    def test_the_figures_are_the_published_ones(self):
        """Pinned, so a change in either data file or in the statistics shows up here."""
        pandalm, llmbar = self.reports["pandalm-testset"], self.reports["llmbar-mtbench"]
        assert pandalm["humans"]["fleiss_kappa"] == pytest.approx(0.864175, abs=1e-6)
        assert pandalm["humans"]["krippendorff_alpha"] == pytest.approx(0.864221, abs=1e-6)
        gpt35, pandalm7b = pandalm["judges"]["gpt-3.5-turbo"], pandalm["judges"]["pandalm-7b"]
        assert gpt35["order1"]["n"] == 974 and pandalm7b["order1"]["n"] == 999
        assert gpt35["order1"]["kappa"] == pytest.approx(0.492865, abs=1e-6)
        assert pandalm7b["order1"]["kappa"] == pytest.approx(0.435355, abs=1e-6)
        gpt4 = llmbar["judges"]["gpt-4"]
        assert (gpt4["flips"], gpt4["flip_rate"]) == (26, 0.13)
        assert gpt4["combined"]["kappa"] == pytest.approx(0.548673, abs=1e-6)
        assert llmbar["judges"]["palm-2"]["verdicts"] == {"order1": 192, "order2": 193, "both": 192}

    def test_the_text_report_prints_each_judge_side_by_side(self):
        code, out, _ = cli("report", "llmbar-mtbench")
        assert code == 0
        assert "order 2   0.650 [0.545, 0.755] substantial · agreement 0.825 · n=200" in out
        assert "flips 85 of 200 (0.425) · cost not known (imported verdicts)" in out
        code, out, _ = cli("list")
        assert "llmbar-mtbench  200 pairs" in out and "pandalm-testset  999 pairs" in out

    def test_the_lab_page_shows_every_judge_with_its_kappas(self):
        client = Client()
        client.force_login(make_user())
        page = client.get(reverse("lab_detail", args=["llmbar-mtbench"])).content.decode()
        table = page.split('id="judges"', 1)[1].split("</table>", 1)[0]
        for judge, figures in self.reports["llmbar-mtbench"]["judges"].items():
            row = table.split(f"<code>{judge}</code>", 1)[1].split("</tr>", 1)[0]
            for view in ("order1", "order2", "combined"):
                assert f"<strong>{figures[view]['kappa']:.2f}</strong>" in row, (judge, view)
            assert f"{figures['flips']} of {figures['verdicts']['both']}" in row
        humans = client.get(reverse("lab_detail", args=["pandalm-testset"])).content.decode()
        assert "annotator1~annotator2" in humans and "Fleiss' kappa 0.86" in humans


# --- a judge run through the engine ----------------------------------------------------------


def small_pairset(tmp_path: Path, count: int = 20, name: str = "small.jsonl") -> Path:
    """``count`` pairs, three labellers each (some without a majority), no judge verdicts."""
    rng = np.random.default_rng(7)
    lines = []
    for index in range(count):
        votes = [
            {"labeller": labeller, "prefer": str(rng.choice(LABELS, p=[0.45, 0.4, 0.15]))}
            for labeller in ("ada", "bo", "cy")
        ]
        lines.append(
            {
                "id": f"p{index}",
                "task": "Writing" if index % 2 else "Maths",
                "question": f"Question {index}: explain item {index} briefly.",
                "answer_a": f"Answer A to {index}.",
                "answer_b": f"Answer B to {index}, longer and with more detail.",
                "model_a": "m1",
                "model_b": "m2",
                "votes": votes,
            }
        )
    file = tmp_path / name
    file.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return file


def lab_verdicts(run: Run) -> dict[int, dict[str, str]]:
    """The run's readable judge verdicts by order and pair id, in a / b / tie terms."""
    pair_of = dict(PairSetItem.objects.values_list("case_id", "pair_id"))
    side = {"baseline": "a", "candidate": "b", "tie": "tie"}
    orders: dict[int, dict[str, str]] = {1: {}, 2: {}}
    rows = Judgement.objects.filter(run=run, kind="pair", status="done", parse_status="ok")
    for case_id, order, verdict in rows.values_list("case_id", "order", "side"):
        orders[order][pair_of[case_id]] = side[verdict]
    return orders


@pytest.mark.django_db(transaction=True)
def test_a_fake_judge_runs_through_the_engine_and_a_second_run_is_all_cache_hits(tmp_path):
    PriceTable.objects.ensure_default()
    file = small_pairset(tmp_path)
    assert cli("import", str(file))[0] == 0

    code, out, err = cli("judge", "small", "--judge", "fake/small")

    assert code == 0, err
    first = PairSetJudgeRun.objects.get().run
    assert first.status == Run.Status.DONE and first.contestants == ["given/a", "given/b"]
    assert PairSetJudgeRun.objects.get().pairset == PairSet.objects.get()  # the run's link
    assert first.judge["model"] == "fake/small"
    assert first.judge_config["prompt"] == PROMPT_VERSION  # the judge measured is recorded
    calls = Judgement.objects.filter(run=first, kind="pair")
    assert calls.count() == 40 and not calls.filter(cached=True).exists()
    assert first.spent_judge_usd > 0 and first.spent_answers_usd == 0
    given = {(a.case_id, a.contestant): a.text for a in Answer.objects.filter(run=first)}
    assert given[("p3", "given/a")] == "Answer A to 3." and len(given) == 40
    assert "estimate: $" in err and "run " in out and "order 1" in out

    code, _, err = cli("judge", "small", "--judge", "fake/small")

    assert code == 0, err
    assert "40 judge calls (40 cached)" in err  # the estimate finds the engine's cache keys
    second = PairSetJudgeRun.objects.order_by("-created_at").first().run
    assert second.pk != first.pk and second.status == Run.Status.DONE
    repeat = Judgement.objects.filter(run=second)
    assert repeat.count() == repeat.filter(cached=True).count() > 0
    assert second.spent_judge_usd == 0

    report = json.loads(cli("report", "small", "--json")[1])
    judge = report["judges"]["fake/small"]
    assert (judge["source"], judge["run_id"], judge["cost_usd"]) == ("lab", second.id, 0.0)
    assert judge["cost_if_uncached_usd"] > 0 and judge["cache_hits"] == judge["calls"]
    # The figures against the same references, from the Judgement rows.
    rows = jsonl_rows(file)
    orders = lab_verdicts(second)
    for row in rows:
        row["judge"] = [
            {"judge": "fake/small", "order": order, "prefer": verdicts[row["id"]]}
            for order, verdicts in orders.items()
            if row["id"] in verdicts
        ]
    assert_judge_matches_references(judge, rows, "fake/small")
    assert judge["flips"] > 0  # the fake judge leans toward "Answer 1"


@pytest.mark.django_db(transaction=True)
def test_a_scripted_judge_maps_both_orders_back_to_answer_a_and_b(tmp_path):
    PriceTable.objects.ensure_default()
    file = tmp_path / "three.jsonl"
    rows = [
        {"id": f"p{i}", "task": "Writing", "question": f"Q{i}", "answer_a": f"A{i}",
         "answer_b": f"B{i}", "model_a": "m1", "model_b": "m2",
         "votes": [{"labeller": "ada", "prefer": prefer}]}
        for i, prefer in enumerate(["a", "b", "b"], start=1)
    ]  # fmt: skip
    file.write_text("\n".join(json.dumps(row) for row in rows))
    verdict = '{{"reason": "r", "winner": "{}"}}'
    replies = tmp_path / "replies.yaml"
    # order 1 shows answer_a as "Answer 1"; order 2 shows answer_b first
    script = {"p1": ["1", "2"], "p2": ["2", "2"], "p3": ["tie", "1"]}
    replies.write_text(
        "judge:\n"
        + "".join(
            f"  judge/writing/{pair}: {json.dumps([verdict.format(w) for w in winners])}\n"
            for pair, winners in script.items()
        )
    )
    assert cli("import", str(file))[0] == 0

    code, _, err = cli("judge", "three", "--judge", "scripted/judge", "--replies", str(replies))

    assert code == 0, err
    judge = json.loads(cli("report", "three", "--json")[1])["judges"]["scripted/judge"]
    # p1: a, a · p2: b, a (a flip) · p3: tie, b
    assert lab_verdicts(Run.objects.get()) == {
        1: {"p1": "a", "p2": "b", "p3": "tie"},
        2: {"p1": "a", "p2": "a", "p3": "b"},
    }
    assert judge["order1"]["confusion"] == [[1, 0, 0], [0, 1, 1], [0, 0, 0]]
    assert judge["combined"]["confusion"] == [[1, 0, 0], [0, 1, 1], [0, 0, 0]]
    assert (judge["flips"], judge["flip_rate"]) == (1, pytest.approx(1 / 3, abs=1e-6))
    assert judge["cost_usd"] is None  # scripted/… has no price row: not priced, not $0


@pytest.mark.django_db(transaction=True)
def test_a_judge_over_the_cap_is_refused_and_nothing_is_stored_or_spent(tmp_path):
    PriceTable.objects.ensure_default()
    assert cli("import", str(small_pairset(tmp_path)))[0] == 0
    before = [model.objects.count() for model in STORED]

    code, _, err = cli("judge", "small", "--judge", "fake/large", "--max-cost", "0.0001")

    assert code == 4
    assert "over the cap $0.0001; nothing was stored or spent" in err
    after = [model.objects.count() for model in STORED]
    assert after == before


@pytest.mark.django_db
def test_an_unknown_or_keyless_judge_is_refused_before_anything_is_stored(tmp_path, monkeypatch):
    PriceTable.objects.ensure_default()
    assert cli("import", str(small_pairset(tmp_path)))[0] == 0
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    misspelt = cli("judge", "small", "--judge", "openai/gpt-4o-mni")
    fake_misspelt = cli("judge", "small", "--judge", "openai/gpt-4o-mni", "--fake")
    keyless = cli("judge", "small", "--judge", "openai/gpt-4o-mini")
    given = cli("judge", "small", "--judge", "given/a", "--fake")
    scripted = cli("judge", "small", "--judge", "scripted/judge")
    missing = cli("judge", "nope", "--judge", "fake/small")

    assert misspelt[0] == 2 and "did you mean 'openai/gpt-4o-mini'" in misspelt[2]
    # priced by the planner's rule, as a suite's run: --fake does not excuse an unknown model
    assert fake_misspelt[0] == 2 and "did you mean 'openai/gpt-4o-mini'" in fake_misspelt[2]
    # the run planner's missing-key refusal, as for a suite's run: the variable, the model
    assert keyless[0] == 2 and "OPENAI_API_KEY" in keyless[2] and "gpt-4o-mini" in keyless[2]
    assert given[0] == 2 and "is not a judge model" in given[2]
    assert scripted[0] == 2 and "needs a replies file" in scripted[2]
    assert missing[0] == 2 and "no pair set named 'nope' (known: small)" in missing[2]
    assert not Run.objects.exists() and not SuiteVersion.objects.exists()


# --- bad files ------------------------------------------------------------------------------

GOOD = {
    "id": "p1", "question": "Q", "answer_a": "A", "answer_b": "B", "model_a": "m1",
    "model_b": "m2", "votes": [{"labeller": "ada", "prefer": "a"}],
}  # fmt: skip
BAD_FILES = {
    "invalid JSON": (
        json.dumps(GOOD) + '\n{"id": "p2", "question": }\n',
        "bad.jsonl:2: not valid JSON: Expecting value at column 26",
    ),
    "missing key": (
        json.dumps({k: v for k, v in GOOD.items() if k != "question"}),
        "bad.jsonl:1: question: missing required key 'question'",
    ),
    "bad prefer": (
        json.dumps(GOOD | {"votes": [{"labeller": "ada", "prefer": "left"}]}),
        'bad.jsonl:1: votes[0].prefer: prefer must be a, b or tie, not "left"',
    ),
    "duplicate ids": (
        json.dumps(GOOD) + "\n" + json.dumps(GOOD),
        "bad.jsonl:2: id: duplicate id 'p1' (first on line 1)",
    ),
    "empty file": ("", "bad.jsonl: the file holds no pairs: expected one JSON object a line"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_exits_2_naming_the_line_and_key_and_stores_nothing(case, tmp_path, monkeypatch):
    text, message = BAD_FILES[case]
    (tmp_path / "bad.jsonl").write_text(text)
    monkeypatch.chdir(tmp_path)

    code, out, err = cli("import", "bad.jsonl")

    assert code == 2 and out == ""
    assert f"error: {message}" in err.splitlines()
    assert "Traceback" not in err
    assert not PairSet.objects.exists() and not PairSetItem.objects.exists()


@pytest.mark.django_db
def test_a_missing_file_a_bad_name_and_a_taken_name_exit_2(tmp_path):
    file = tmp_path / "good.jsonl"
    file.write_text(json.dumps(GOOD))

    assert cli("import", str(tmp_path / "nope.jsonl"))[0] == 2
    assert "not usable" in cli("import", str(file), "--name", "Bad Name")[2]
    assert cli("import", str(file))[0] == 0
    taken = cli("import", str(file))
    assert taken[0] == 2 and "a pair set named 'good' exists already" in taken[2]
    assert PairSet.objects.count() == 1


# --- the pages ------------------------------------------------------------------------------


@override_settings(ROOT_URLCONF=__name__)
class LabPageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        PriceTable.objects.ensure_default()
        cls.user = make_user()

    def setUp(self):
        self.client.force_login(self.user)

    def upload(self, text: str, name: str = "", filename: str = "mine.jsonl"):
        file = SimpleUploadedFile(filename, text.encode(), content_type="application/jsonl")
        return self.client.post(reverse("lab_list"), {"file": file, "name": name})

    def imported(self) -> PairSet:
        rows = [
            GOOD | {"id": "p1", "judge": [{"judge": "j1", "order": 1, "prefer": "a"}]},
            GOOD | {"id": "p2", "votes": [{"labeller": "ada", "prefer": "b"}],
                    "judge": [{"judge": "j1", "order": 1, "prefer": "b"}]},
        ]  # fmt: skip
        response = self.upload("\n".join(json.dumps(row) for row in rows))
        assert response.status_code == 302
        return PairSet.objects.get(name="mine")

    def test_the_lab_requires_login(self):
        anonymous = Client()
        for url in (reverse("lab_list"), reverse("lab_detail", args=["mine"])):
            response = anonymous.get(url)
            assert response.status_code == 302 and response["Location"].startswith("/login/")

    def test_an_upload_imports_the_set_and_lands_on_its_judges(self):
        pairset = self.imported()

        page = self.client.get(reverse("lab_detail", args=[pairset.name]))

        text = page.content.decode()
        assert page.status_code == 200 and "<html" in text
        assert "Imported 2 pairs as mine." in text
        row = text.split("<code>j1</code>", 1)[1].split("</tr>", 1)[0]
        assert "<strong>1.00</strong> almost perfect" in row and "n = 2" in row
        listing = self.client.get(reverse("lab_list")).content.decode()
        assert reverse("lab_detail", args=["mine"]) in listing

    def test_a_bad_upload_shows_every_problem_by_line_and_stores_nothing(self):
        bad_vote = GOOD | {"id": "p2", "votes": [{"labeller": "x", "prefer": "??"}]}
        text = "\n".join([json.dumps(GOOD), json.dumps(bad_vote), '{"id": '])

        response = self.upload(text)

        page = response.content.decode()
        assert response.status_code == 400 and "<html" in page
        assert "2 problems; nothing was imported" in page
        assert "line 2" in page and "votes[0].prefer" in page and "line 3" in page
        assert "prefer must be a, b or tie, not &quot;??&quot;" in page
        assert not PairSet.objects.exists()
        empty = self.upload("")
        assert empty.status_code == 400 and "the file holds no pairs" in empty.content.decode()

    def test_a_taken_name_is_a_message_not_a_500(self):
        self.imported()
        response = self.upload(json.dumps(GOOD))
        assert response.status_code == 400
        assert "a pair set named &#x27;mine&#x27; exists already" in response.content.decode()

    def test_the_figures_refresh_as_a_fragment_over_htmx(self):
        pairset = self.imported()
        response = self.client.get(reverse("lab_detail", args=[pairset.name]), **HTMX)
        fragment = response.content.decode()
        assert "<html" not in fragment and fragment.strip().startswith('<div id="lab-figures"')
        assert "HX-Request" in response["Vary"]
        assert "hx-trigger" not in fragment  # nothing running: no polling

    def test_starting_a_judge_run_stores_it_with_given_answers_and_queues_it(self):
        from unittest import mock

        pairset = self.imported()
        url = reverse("lab_detail", args=[pairset.name])

        # whichever broker is configured (the ORM, or Redis on the second CI leg)
        with (
            mock.patch("runs.engine.tasks.async_task") as queued,
            self.captureOnCommitCallbacks(execute=True),
        ):
            form = {"model": "fake/small", "rubric": "Be strict.", "fake": "on"}
            response = self.client.post(url, form)

        assert response.status_code == 302 and response["Location"] == url
        lab = PairSetJudgeRun.objects.get()
        assert lab.name.startswith("fake/small+") and lab.fake and lab.rubric == "Be strict."
        assert lab.run.status == Run.Status.QUEUED and lab.run.created_by == self.user
        answers = Answer.objects.filter(run=lab.run)
        assert answers.count() == 4 and set(answers.values_list("status", flat=True)) == {"done"}
        assert queued.call_count == MAX_SHARDS
        assert {c.args for c in queued.call_args_list} == {
            ("runs.engine.tasks.run_shard", lab.run_id, MAX_SHARDS)
        }
        page = self.client.get(url).content.decode()
        assert lab.run_id in page and 'hx-trigger="every 2s"' in page

    def test_a_double_posted_judge_run_form_starts_one_run(self):
        import re
        from unittest import mock

        pairset = self.imported()
        url = reverse("lab_detail", args=[pairset.name])
        page = self.client.get(url).content.decode()
        token = re.search(r'name="form_token" value="([^"]+)"', page)
        assert token, "the judge run form carries no form_token"
        form = {"model": "fake/small", "fake": "on", "form_token": token.group(1)}

        with (
            mock.patch("runs.engine.tasks.async_task") as queued,
            self.captureOnCommitCallbacks(execute=True),
        ):
            first = self.client.post(url, form)
            second = self.client.post(url, form, follow=True)

        assert first.status_code == 302 and second.redirect_chain == [(url, 302)]
        assert Run.objects.count() == 1 and PairSetJudgeRun.objects.count() == 1
        assert queued.call_count == MAX_SHARDS  # queued once: nothing is paid twice
        assert "This form had already started this run" in second.content.decode()

    def test_the_lab_keeps_a_cap_to_the_micro_dollar_as_the_new_run_form_does(self):
        from decimal import Decimal
        from unittest import mock

        pairset = self.imported()
        url = reverse("lab_detail", args=[pairset.name])

        with mock.patch("runs.engine.tasks.async_task"):
            form = {"model": "fake/small", "fake": "on", "max_cost": "1.234567"}
            assert self.client.post(url, form).status_code == 302
            rounded = self.client.post(url, form | {"max_cost": "1.2345678"})

        assert Run.objects.get().cap_usd == Decimal("1.234567")
        assert rounded.status_code == 400
        assert "the cap has more than 6 decimal places" in rounded.content.decode()

    def test_a_judge_over_the_cap_or_unknown_is_refused_on_the_page_with_nothing_stored(self):
        pairset = self.imported()
        url = reverse("lab_detail", args=[pairset.name])

        over = self.client.post(url, {"model": "fake/large", "max_cost": "0.0001"})
        unknown = self.client.post(url, {"model": "openai/gpt-4o-mni"})

        assert over.status_code == 400 and "over the cap $0.0001" in over.content.decode()
        assert unknown.status_code == 400
        assert "did you mean &#x27;openai/gpt-4o-mini&#x27;" in unknown.content.decode()
        assert not Run.objects.exists() and not PairSetJudgeRun.objects.exists()

    def test_the_figures_download_as_the_report_json(self):
        pairset = self.imported()
        response = self.client.get(reverse("lab_report_json", args=[pairset.name]))
        assert response.status_code == 200 and response["Content-Type"] == "application/json"
        assert json.loads(response.content)["judges"]["j1"]["order1"]["n"] == 2


@pytest.mark.django_db
def test_the_planner_refuses_a_plan_of_given_answers_that_lacks_one(tmp_path):
    from lab.judges import CONTESTANTS, JudgeConfig, plan_judge_run
    from runs.planning.planner import PlanError, RunOptions, make_plan

    PriceTable.objects.ensure_default()
    assert cli("import", str(small_pairset(tmp_path, count=2)))[0] == 0
    lab = plan_judge_run(PairSet.objects.get(), JudgeConfig(model="fake/small"))
    given = {(c.task_id, c.case_id, c.contestant): "text" for c in lab.plan.cells}
    assert set(CONTESTANTS) == {contestant for _, _, contestant in given}
    del given[next(iter(given))]

    with pytest.raises(PlanError, match=r"no given answer of given/a for maths/p0"):
        make_plan(None, lab.plan.suite, RunOptions(), given=given)
