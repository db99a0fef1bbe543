"""The calibration at its edges (issue 12): one judgement counts once, the suite's
calibration run is chosen, its kappa carries the judge it measured, and the run references
`latest` and `baseline` mean what they say."""

from __future__ import annotations

import pytest
from django.test import Client

from evalsite.core.calibration import SUITE_FILE, LabelView, PairView, match_labels
from evalsite.core.judging import judge_config
from evalsite.core.suites import parse_suite
from runs.models import Run, SuiteVersion
from runs.results.calibration import run_calibration, suite_calibration
from tests.helpers.factories import (
    make_judged_run,
    make_label,
    make_pair,
    make_run,
    make_suite_version,
    make_user,
    small_suite_text,
)

LABELLED_SUITE = """\
suite: labelled
version: 1
models: [fake/small, fake/large]
repeats: 3
judge: {{model: {judge}, calibration: {{min_kappa: 0.4, min_labels: 10}}}}
tasks:
  - id: greet
    prompt: "Say hello to {{{{who}}}}."
    cases:
{cases}
labels:
{labels}
"""


def labelled_suite(n_cases: int = 4, judge: str = "fake/large") -> str:
    """A suite whose labels prefer the candidate on even cases, the baseline on odd ones."""
    cases = "\n".join(f"      - {{id: c{i}, vars: {{who: W{i}}}}}" for i in range(n_cases))
    labels = "\n".join(
        f"  - {{task: greet, case: c{i}, baseline: fake/small, candidate: fake/large, "
        f"prefer: {PREFER[i % 2]}}}"
        for i in range(n_cases)
    )
    return LABELLED_SUITE.format(cases=cases, labels=labels, judge=judge)


PREFER = ("candidate", "baseline")


def agreeing(n_cases: int, repeats: int = 1) -> dict:
    """Judge scores that agree with `labelled_suite`'s labels (over repeats: by the mean)."""
    scores = {}
    for i in range(n_cases):
        per_repeat = [1.0, 1.0, 0.0] if i % 2 == 0 else [0.0, 0.0, 1.0]
        scores[("greet", f"c{i}")] = per_repeat[:repeats] if repeats > 1 else per_repeat[0]
    return scores


def _view(key, case, repeat, score, base="a", cand="b") -> PairView:
    category = "candidate" if score > 0.5 else "baseline" if score < 0.5 else "tie"
    return PairView(key, "t", case, repeat, base, cand, f"sa{key}", f"sb{key}", category, score)


# --- one judgement, one count (core) ------------------------------------------------------------


def test_a_suite_file_label_over_three_repeats_is_one_judgement_against_the_judges_mean():
    pairs = [_view(1, "x", 0, 1.0), _view(2, "x", 1, 0.0), _view(3, "x", 2, 1.0)]
    label = LabelView(SUITE_FILE, "suite file", "t", "x", "a", "b", "candidate")

    matched = match_labels(pairs, [label])

    assert len(matched.items) == 1  # not three
    assert matched.items[0][2:] == ("candidate", "candidate")  # mean 2/3: candidate
    assert matched.labels_used["total"] == 1 and matched.over_repeats == 1


def test_a_browser_label_on_identical_repeats_is_one_judgement_and_merges_with_its_suite_label():
    same = dict(baseline_sha="s1", candidate_sha="s2")
    pairs = [
        PairView(1, "t", "x", 0, "a", "b", judge="baseline", score=0.0, **same),
        PairView(2, "t", "x", 1, "a", "b", judge="tie", score=0.5, **same),
    ]
    labels = [
        LabelView("browser", "ann", "t", "x", "a", "b", "baseline", **same, at="1"),
        LabelView(SUITE_FILE, "bob", "t", "x", "a", "b", "baseline", at="2"),
    ]

    matched = match_labels(pairs, labels)

    # both labels cover the same two pairs: one item, two labellers, one comparison
    assert len(matched.judged) == 1 and matched.judged[0].votes == {
        "ann": "baseline",
        "bob": "baseline",
    }
    assert matched.items[0][2:] == ("baseline", "baseline")  # mean 0.25
    assert matched.ratings == {0: {"ann": "baseline", "bob": "baseline"}}


def test_a_label_for_a_case_the_run_did_not_answer_is_not_called_a_model_pair_mismatch():
    pairs = [_view(1, "x", 0, 1.0)]
    labels = [
        LabelView(SUITE_FILE, "s", "t", "other-case", "a", "b", "candidate"),
        LabelView(SUITE_FILE, "s", "t", "x", "a", "zzz", "candidate"),
    ]
    matched = match_labels(pairs, labels)
    assert (matched.not_in_run, matched.ignored) == (1, 1)


# --- one judgement, one count (through the database) ------------------------------------------


@pytest.mark.django_db
def test_four_suite_labels_with_three_repeats_stay_four_and_insufficient():
    version = make_suite_version(labelled_suite(4))
    run = make_judged_run(agreeing(4, repeats=3), suite_version=version)

    calibration = suite_calibration(version.suite, run)

    assert calibration["n"] == 4 and calibration["labels_used"]["total"] == 4
    assert calibration["kappa"] == 1.0  # each label against the judge's mean over 3 repeats
    assert calibration["status"] == "insufficient_labels"
    assert calibration["over_repeats"] == 4 and "one judgement" in calibration["repeats_rule"]


# --- the suite's calibration run ----------------------------------------------------------------


@pytest.mark.django_db
def test_an_only_run_and_a_lab_run_do_not_change_the_suites_calibration_run():
    version = make_suite_version(labelled_suite(4))
    whole = make_judged_run(agreeing(4), suite_version=version)
    narrow = make_judged_run({("greet", "c0"): 1.0}, suite_version=version,
                             options={"only": "greet/c0"})  # fmt: skip
    lab_version = make_suite_version(small_suite_text("lab-x"), origin=SuiteVersion.Origin.LAB)
    make_judged_run(suite_version=lab_version)

    assert narrow.created_at >= whole.created_at
    assert Run.objects.calibration_run(version.suite) == whole
    calibration = suite_calibration(version.suite)
    assert calibration["run_id"] == whole.id and calibration["n"] == 4
    # a member may still look at the narrow run: the labels of other cases are "not in it"
    chosen = suite_calibration(version.suite, Run.objects.calibration_run(version.suite, narrow.id))
    assert chosen["run_id"] == narrow.id
    assert (chosen["n"], chosen["labels_not_in_run"], chosen["labels_ignored"]) == (1, 3, 0)


@pytest.mark.django_db
def test_the_dashboard_and_queue_follow_the_calibration_run_not_the_latest_narrow_run():
    version = make_suite_version(labelled_suite(4))
    make_judged_run(agreeing(4), suite_version=version)
    make_judged_run({("greet", "c0"): 0.0}, suite_version=version, options={"only": "greet/c0"})
    lab_version = make_suite_version(small_suite_text("lab-x"), origin=SuiteVersion.Origin.LAB)
    lab_run = make_judged_run(suite_version=lab_version)
    member = make_user()
    client = Client()
    client.force_login(member)

    dashboard = client.get("/").content.decode()
    label_page = client.get(f"/label/{version.suite.name}/").content.decode()

    assert "lab-x" not in dashboard and lab_run.id not in dashboard
    assert "UNCALIBRATED: too few labels yet" in dashboard  # 4 labels of the whole run, not 1
    assert "0 of 4 pairs labelled" in label_page


@pytest.mark.django_db
def test_the_pinned_baseline_is_the_calibration_run_when_it_is_judged():
    version = make_suite_version(labelled_suite(2))
    first = make_judged_run({("greet", "c0"): 1.0, ("greet", "c1"): 1.0}, suite_version=version)
    make_judged_run({("greet", "c0"): 1.0, ("greet", "c1"): 1.0}, suite_version=version)
    version.suite.pin_baseline(first)
    assert Run.objects.calibration_run(version.suite) == first
    assert suite_calibration(version.suite)["pinned"] is True


# --- provenance: the judge a kappa measured -------------------------------------------------------


@pytest.mark.django_db
def test_changing_the_judge_model_marks_the_suites_calibration_stale():
    version = make_suite_version(labelled_suite(2, judge="fake/large"))
    run = make_judged_run({("greet", "c0"): 1.0, ("greet", "c1"): 1.0}, suite_version=version)
    assert suite_calibration(version.suite)["stale"] is False

    make_suite_version(labelled_suite(2, judge="fake/small"))  # the suite's judge changes
    calibration = suite_calibration(version.suite)

    assert calibration["run_id"] == run.id and calibration["stale"] is True
    assert calibration["judge_config"]["model"] == "fake/large"
    assert calibration["current_judge_config"]["model"] == "fake/small"
    member = make_user()
    client = Client()
    client.force_login(member)
    assert "stale: the judge changed" in client.get("/").content.decode()
    assert "stale" in client.get(f"/suites/{version.suite.name}/calibration/").content.decode()


def test_the_judge_configuration_moves_with_the_model_and_the_rubric():
    base = parse_suite(labelled_suite(2).encode(), filename="x.yaml", origin="upload")
    reworded = labelled_suite(2).replace("judge: {model: fake/large,",
                                         'judge: {model: fake/large, rubric: "be strict",')  # fmt: skip
    other = parse_suite(reworded.encode(), filename="x.yaml", origin="upload")
    first = judge_config(base, "fake/large")
    assert judge_config(base, "fake/small")["model"] != first["model"]
    assert judge_config(other, "fake/large")["rubric"] != first["rubric"]
    assert judge_config(base, "fake/large") == first


# --- the pairs' human consensus -----------------------------------------------------------------


@pytest.mark.django_db
def test_a_browser_label_sets_the_human_consensus_of_the_pairs_it_covers():
    from labels.queue import offer, record

    run = make_judged_run({("greet", "one"): 0.0, ("greet", "two"): 1.0})
    pair = run.pairs.get(case_id="one")
    member = make_user()
    shown = offer(run.suite, member, pair)
    record(member, shown.assignment, "tie", "", "sample")
    pair.refresh_from_db()
    assert pair.human == "tie"
    assert run_calibration(run).human_by_pair == {pair.pk: "tie"}


@pytest.mark.django_db
def test_two_labellers_on_one_pair_count_once_in_n():
    run = make_judged_run({("greet", "one"): 1.0, ("greet", "two"): 1.0})
    pair = make_pair(run, "greet", "three", score=0.0)
    make_label(pair, "baseline")
    make_label(pair, "baseline")
    calibration = run_calibration(run)
    assert len(calibration.items) == 1 and calibration.labels_used["total"] == 2


# --- a run asked to cancel while nobody works on it --------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_shard_that_finds_a_cancel_requested_run_closes_it_with_a_partial_report():
    from runs.engine.runner import execute
    from runs.models import PriceTable
    from runs.planning.planner import RunOptions, make_plan, store_plan

    PriceTable.objects.ensure_default()
    version = make_suite_version()
    loaded = parse_suite(version.yaml_text.encode(), filename="x.yaml", origin="upload")
    run = store_plan(make_plan(version, loaded, RunOptions(fake=True)))
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)

    run = execute(run.id)

    assert run.status == Run.Status.CANCELLED
    assert run.report is not None and run.report["status"] == "cancelled"
    assert run.report["totals"]["answers"] == 0


@pytest.mark.django_db
def test_a_new_judge_earns_no_headline_from_the_old_judges_agreement():
    from runs.results.reporting import write_report

    text = labelled_suite(0).replace("min_labels: 10", "min_labels: 2")
    cases = "\n".join(f"      - {{id: c{i}, vars: {{who: W{i}}}}}" for i in range(4))
    text = text.replace("    cases:\n", "    cases:\n" + cases + "\n").replace("labels:\n\n", "")
    old = make_judged_run(agreeing(4), suite_version=make_suite_version(text))
    member = make_user()
    for pair in old.pairs.all():  # the team agrees with the old judge on every pair
        make_label(pair, pair.category, labeller=member)
    assert write_report(old)["headline_eligible"] is True

    new_version = make_suite_version(text.replace("model: fake/large,", "model: fake/small,"))
    disagreeing = {key: 1.0 - score for key, score in agreeing(4).items()}
    new = make_judged_run(disagreeing, suite_version=new_version)  # same answers, new judge

    report = write_report(new)
    assert report["calibration"]["judge_config"]["model"] == "fake/small"
    assert report["calibration"]["n"] == 4  # the same labels, against the new verdicts
    assert report["headline_eligible"] is False and report["calibration"]["kappa"] < 0


@pytest.mark.django_db
def test_mcp_compare_takes_latest_after_a_refused_run_and_names_the_suites_calibration():
    from evalsite.mcp import tools

    first = make_judged_run(report=None)
    from runs.results.reporting import write_report

    write_report(first)
    make_run(suite_version=first.suite_version, status=Run.Status.REFUSED)  # no report
    reply = tools.compare_runs(first.id, "latest")
    assert reply["calibration"]["a"]["run_id"] == reply["calibration"]["b"]["run_id"] == first.id
    summary = tools.run_reply(first)
    assert summary["suite_calibration"]["run_id"] == first.id
    assert summary["suite_calibration"]["stale"] is False
