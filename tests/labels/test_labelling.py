"""Blind labelling (SPEC §10.2-10.4): the queue, blindness, the label flow, overlap for a
second labeller, concurrency, targeted review, and labels in and out as YAML."""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest
from django.db import close_old_connections, connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from evalsite.core.suites import parse_suite
from labels.queue import baseline_on_left
from runs.models import Answer, Decision, Judgement, Label, Pair, PriceTable, Run
from runs.results.reporting import write_report
from tests.helpers.factories import make_pair, make_run, make_suite_version, make_user
from tests.helpers.labelling import blind_run, member_client, page_token

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def run() -> Run:
    """A finished, judged run of the suite `blind`, made from rows (no engine): in each task
    the cases go candidate wins, baseline wins, a flip, in turn."""
    return blind_run()


def _label(client: Client, choice: str = "left", note: str = "", **extra) -> str:
    """Label the pair on screen; returns the next page's HTML."""
    page = client.get("/label/blind/").content.decode()
    response = client.post(
        "/label/blind/", {"token": page_token(page), "choice": choice, "note": note}, **extra
    )
    return response.content.decode()


# --- blindness ---------------------------------------------------------------------------------


def test_the_page_reveals_no_model_verdict_cost_or_id_and_not_which_side_is_the_baseline(run):
    members = [make_user(username="ann"), make_user(username="bob")]
    forbidden = {"scripted/", "base", "cand", "judge", "$", " ms", "baseline", "candidate"}
    answer_ids = set(Answer.objects.filter(run=run).values_list("pk", flat=True))
    answer_ids |= set(Pair.objects.filter(run=run).values_list("pk", flat=True))
    shapes, left_is_baseline = set(), Counter()
    for member in members:
        client = member_client(member)
        for pair in Pair.objects.filter(run=run).judged():
            from labels.queue import offer

            shown = offer(pair.run.suite, member, pair)
            html = client.get(f"/label/blind/?token={shown.token}").content.decode()
            body = html.split("<main>", 1)[1].split("</main>", 1)[0]
            body = body.replace(pair.baseline.text, "ANSWER").replace(pair.candidate.text, "ANSWER")
            body = re.sub(r'value="[^"]+" *>\s*<input type="hidden" name="mode"', "TOKEN", body)
            body = re.sub(r"Question \S+|Other question \S+", "TASK", body)
            body = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "CSRF", body)
            body = re.sub(r"\d+ of \d+ pairs labelled · \d+ by you", "PROGRESS", body)
            body = re.sub(r"(?s)<progress.*?</progress>", "BAR", body)
            body = re.sub(r"(?s)<h2>Calibration.*?</section>", "PANEL", body)
            # the block naming the calibration run shows run ids (never an answer's or a
            # pair's) and nothing else that identifies a side
            chooser = re.search(r'(?s)<form method="get" class="calibration-run".*?</form>', body)
            assert chooser and run.id in chooser.group(0)
            assert not set(re.findall(r"\d{8}T\d{6}Z_\w+", chooser.group(0))) - {run.id}
            assert not any(word in chooser.group(0) for word in forbidden)
            body = body.replace(chooser.group(0), "RUN")
            # the run's id (in full or cut short) names the run, never a side or an answer
            body = re.sub(r"\d{8}T\d{6}Z_\w+…?", "RUN", body)
            for word in forbidden:
                assert word not in body, word
            numbers = {int(n) for n in re.findall(r"\d+", body)}
            assert not {n for n in numbers if n >= 10} & answer_ids, (numbers, body)
            shapes.add(body)
            left_is_baseline[baseline_on_left(member, pair.content_key)] += 1
    # every pair, for both members, renders to the same page once its texts are masked:
    # nothing in text, attributes, order or hidden elements depends on the side
    assert len(shapes) == 1
    # and the sides themselves are mixed
    assert left_is_baseline[True] > 10 and left_is_baseline[False] > 10


def test_the_token_is_opaque_and_only_its_member_can_use_it(run):
    ann, bob = make_user(username="ann"), make_user(username="bob")
    page = member_client(ann).get("/label/blind/").content.decode()
    token = page_token(page)

    assert "blind" not in token and "scripted" not in token
    stolen = member_client(bob).post("/label/blind/", {"token": token, "choice": "left"}, **HTMX)
    assert "not in your queue" in stolen.content.decode()
    assert not Label.objects.exists()


# --- the flow ----------------------------------------------------------------------------------


def test_a_label_is_stored_as_baseline_or_candidate_from_the_members_sides(run):
    ann = make_user(username="ann")
    client = member_client(ann)
    page = client.get("/label/blind/").content.decode()
    token = page_token(page)

    client.post("/label/blind/", {"token": token, "choice": "left", "note": "clearer"}, **HTMX)

    label = Label.objects.get()
    pair = Pair.objects.filter(run=run, task_id=label.task_id, case_id=label.case_id).first()
    left_baseline = baseline_on_left(ann, pair.content_key)
    assert label.prefer == ("baseline" if left_baseline else "candidate")
    assert label.note == "clearer" and label.source == "browser" and label.mode == "sample"
    assert (label.baseline_sha, label.candidate_sha) == (pair.baseline_sha, pair.candidate_sha)


def test_one_response_brings_the_next_pair_the_progress_and_the_moving_calibration(run):
    client = member_client(make_user())
    first = client.get("/label/blind/").content.decode()
    after = _label(client, "tie", **HTMX)

    assert after.strip().startswith('<div id="label-workspace"')
    assert "1 of 24 pairs labelled · 1 by you" in after
    assert page_token(after) != page_token(first)
    assert "n = 1" in after and 'id="calibration-panel"' in after


def test_a_label_submit_never_reads_a_runs_stored_report(run):
    """The report of a big run is megabytes of JSON: the submit that records a label and
    brings the next pair reads runs without it (the page bench's label submit went from
    p95 106 ms to 37 ms on a 10,000-pair run when two reads of it went)."""
    client = member_client(make_user())
    page = client.get("/label/blind/").content.decode()
    with CaptureQueriesContext(connection) as queries:
        client.post("/label/blind/", {"token": page_token(page), "choice": "left"}, **HTMX)
    selected = [q["sql"].split(" FROM ")[0] for q in queries.captured_queries]
    assert Label.objects.count() == 1
    assert [s for s in selected if '"runs_run"."report"' in s] == []


def test_a_label_submit_never_reads_the_suites_text_or_document(run):
    """A suite of 10,000 cases is megabytes of YAML and JSON; the submit reads the suite's
    parse kept by the process (SuiteVersion.core_suite), never the stored document."""
    client = member_client(make_user())
    _label(client, **HTMX)  # the first label of this process may parse the suite
    page = client.get("/label/blind/").content.decode()
    with CaptureQueriesContext(connection) as queries:
        client.post("/label/blind/", {"token": page_token(page), "choice": "left"}, **HTMX)
    selected = [q["sql"].split(" FROM ")[0] for q in queries.captured_queries]
    assert Label.objects.count() == 2
    for column in ('"runs_suiteversion"."parsed"', '"runs_suiteversion"."yaml_text"'):
        assert [s for s in selected if column in s] == [], column


def test_a_label_submit_matches_the_labels_with_the_pairs_once(run, monkeypatch):
    """The consensus written after a label and the live panel shown with the next pair read
    the same matching: it is worked out once a submit, not once for each."""
    from runs.results import calibration

    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return match_labels(*args, **kwargs)

    match_labels = calibration.match_labels
    monkeypatch.setattr(calibration, "match_labels", counted)
    client = member_client(make_user())
    page = client.get("/label/blind/").content.decode()
    calls.clear()

    after = client.post("/label/blind/", {"token": page_token(page), "choice": "left"}, **HTMX)

    assert "n = 1" in after.content.decode() and len(calls) == 1


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plan")
def test_the_pairs_with_a_consensus_are_found_without_reading_every_pair_of_the_run(run):
    """Each label rewrites the consensus of the pairs it moves (store_human), reading the
    pairs that have one: on a 100,000-pair run, reading every pair for them took 26 ms of
    each submit. The partial index pair_labelled holds those pairs only."""
    plan = Pair.objects.filter(run=run).with_consensus().values_list("pk", "human").explain()
    assert "pair_labelled" in plan


def test_a_double_submit_stores_one_label_and_a_member_can_change_it(run):
    client = member_client(make_user(username="ann"))
    token = page_token(client.get("/label/blind/").content.decode())

    for _ in range(2):
        client.post("/label/blind/", {"token": token, "choice": "left"}, **HTMX)
    client.post("/label/blind/", {"token": token, "choice": "right"}, **HTMX)

    label = Label.objects.get()
    mirrored = {"baseline": "candidate", "candidate": "baseline"}
    assert Label.objects.count() == 1
    assert label.prefer in mirrored  # the third submit changed it to the other side
    page = client.get(f"/label/blind/?token={token}").content.decode()
    assert "You labelled this pair before: <strong>right</strong>" in page


def test_skip_and_undo(run):
    client = member_client(make_user())
    first = client.get("/label/blind/").content.decode()

    skipped = client.post("/label/blind/", {"token": page_token(first), "action": "skip"}, **HTMX)
    labelled = _label(client, "left", **HTMX)
    undone = client.post("/label/blind/", {"action": "undo"}, **HTMX).content.decode()

    assert page_token(skipped.content.decode()) != page_token(first)
    assert not Label.objects.exists()  # undo removed the one label
    assert "0 of 24 pairs labelled" in undone and labelled


def test_other_members_labels_are_never_shown_while_labelling(run):
    # A name with a dot: random tokens on the page (CSRF, signed pair tokens) are base64 and
    # can spell "ann" by chance, but never "ann.other".
    ann, bob = make_user(username="ann.other"), make_user(username="bob")
    with override_settings(EVALSITE_LABEL_OVERLAP=1.0):
        _label(member_client(ann), "left", note="ann-secret-note")
        page = member_client(bob).get("/label/blind/").content.decode()
    assert "ann-secret-note" not in page
    assert "ann.other" not in page.split("<main>", 1)[1]


def test_the_overlap_share_goes_to_a_second_labeller_and_gives_human_human_kappa(run):
    ann, bob = make_user(username="ann"), make_user(username="bob")
    with override_settings(EVALSITE_LABEL_OVERLAP=1.0):
        for member in (ann, bob):
            client = member_client(member)
            for i in range(24):
                _label(client, ("left", "right", "tie")[i % 3])
        calibration = member_client(ann).get("/suites/blind/calibration/").content.decode()
        review = member_client(ann).get("/label/blind/?mode=targeted").content.decode()
    assert Label.objects.filter(labeller=ann, mode="sample").count() == 24
    assert Label.objects.filter(labeller=bob, mode="sample").count() == 24
    assert "ann~bob" in calibration and "Fleiss" in calibration
    # All 24 count for people against each other, the flips among them too. A member labels
    # a pair once, whatever the queue: review offered ann the flips (and the pairs where her
    # labels disagree with the judge) she had labelled in the sample, so those pairs counted
    # as waiting for her and the page hid bob's labels of them from her.
    assert "24 pairs labelled by two or more people" in calibration
    assert 'name="token"' not in review
    assert re.search(r"you labelled the \d+ pairs left in the sample already", review)


def test_without_overlap_a_pair_goes_to_one_labeller(run):
    ann, bob = make_user(username="ann"), make_user(username="bob")
    with override_settings(EVALSITE_LABEL_OVERLAP=0.0):
        for _ in range(12):
            _label(member_client(ann))
            _label(member_client(bob))
    keys = Counter(Label.objects.values_list("task_id", "case_id", "baseline_sha", "candidate_sha"))
    assert sum(keys.values()) == 24 and max(keys.values()) == 1


@pytest.mark.django_db(transaction=True)  # a thread or process reads what it wrote
def test_members_labelling_at_once_lose_nothing_and_duplicate_nothing(run):
    members = [make_user(username=f"m{i}") for i in range(4)]
    errors = []

    def work(member):
        try:
            client = member_client(member)
            # 4 members × 4 labels + 4 pairs open at once leave slack in the 24 pairs for
            # two members racing to the same pair (both may label it; the overlap share the
            # secret key picks can be small): at 5 each the queue could run dry
            for _ in range(4):
                page = client.get("/label/blind/").content.decode()
                token = page_token(page)
                for _ in range(2):  # and a double submit each time
                    client.post("/label/blind/", {"token": token, "choice": "tie"}, **HTMX)
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            close_old_connections()

    with override_settings(EVALSITE_LABEL_OVERLAP=0.2):
        threads = [threading.Thread(target=work, args=(m,)) for m in members]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert not errors
    for member in members:
        assert Label.objects.filter(labeller=member).count() == 4
    per_member = Counter(
        Label.objects.values_list("labeller_id", "task_id", "case_id", "baseline_sha")
    )
    assert max(per_member.values()) == 1


# --- targeted review, the report, the dashboard --------------------------------------------------


def test_targeted_review_offers_flips_and_its_labels_stay_out_of_the_headline_kappa(run):
    client = member_client(make_user())
    page = client.get("/label/blind/?mode=targeted").content.decode()
    token = page_token(page)
    client.post("/label/blind/", {"token": token, "choice": "tie", "mode": "targeted"}, **HTMX)

    label = Label.objects.get()
    assert label.mode == "targeted"
    pair = Pair.objects.filter(run=run, task_id=label.task_id, case_id=label.case_id).first()
    assert pair.flip is True
    report = write_report(run)
    assert report["calibration"]["n"] == 0 and report["calibration"]["labels_targeted"] == 1


def test_a_label_changed_from_a_review_page_left_open_stays_in_the_sample(run):
    from labels.queue import from_token, offer, pair_for

    ann = make_user(username="ann")
    client = member_client(ann)
    review = client.get("/label/blind/?mode=targeted").content.decode()  # a flip, left open
    flip = pair_for(from_token(page_token(review), ann).assignment)
    sampled = offer(run.suite, ann, flip, "sample")  # the same pair, in the sample queue
    client.post("/label/blind/", {"token": sampled.token, "choice": "left"}, **HTMX)
    before = Label.objects.get()

    client.post(
        "/label/blind/", {"token": page_token(review), "choice": "tie", "mode": "targeted"}, **HTMX
    )

    label = Label.objects.get()
    assert label.prefer == "tie"  # the member changed their mind
    assert (label.mode, label.probability) == ("sample", before.probability)
    assert before.mode == "sample" and before.probability is not None


@override_settings(EVALSITE_LABEL_OVERLAP=0.0)
def test_the_sample_does_not_offer_a_member_the_pairs_they_reviewed_and_says_so():
    blind_run(cases=3)  # 6 pairs, a flip in each task
    client = member_client(make_user())
    for _ in range(2):
        page = client.get("/label/blind/?mode=targeted").content.decode()
        client.post(
            "/label/blind/", {"token": page_token(page), "choice": "tie", "mode": "targeted"}
        )
    for _ in range(4):
        _label(client, "left")

    page = client.get("/label/blind/").content.decode()

    assert 'name="token"' not in page
    assert "you labelled the 2 pairs left in the targeted review already" in page
    assert Counter(Label.objects.values_list("mode", flat=True)) == {"targeted": 2, "sample": 4}


def test_undo_in_review_takes_back_the_last_review_label_never_a_sample_one(run):
    # `u` in review deleted the member's last label of any queue and showed that pair
    # again in review: labelled there, a sample label came back targeted (out of the
    # headline kappa)
    client = member_client(make_user())
    _label(client, "left")
    sampled = Label.objects.get()

    nothing = client.post("/label/blind/", {"action": "undo", "mode": "targeted"}, **HTMX)

    assert "Nothing to undo." in nothing.content.decode()
    assert list(Label.objects.values_list("pk", "mode")) == [(sampled.pk, "sample")]
    review = client.get("/label/blind/?mode=targeted").content.decode()
    client.post(
        "/label/blind/", {"token": page_token(review), "choice": "tie", "mode": "targeted"}, **HTMX
    )
    client.post("/label/blind/", {"action": "undo", "mode": "targeted"}, **HTMX)
    assert list(Label.objects.values_list("pk", "mode")) == [(sampled.pk, "sample")]


def test_a_report_built_after_labelling_uses_the_browser_labels(run):
    client = member_client(make_user())
    for _ in range(6):
        _label(client, "left")

    report = write_report(Run.objects.get(pk=run.pk))

    assert report["calibration"]["labels_used"]["browser"] == 6
    assert report["calibration"]["n"] == 6
    assert Pair.objects.filter(run=run).exclude(human="").count() == 6


def test_the_dashboard_counts_the_members_queue(run):
    client = member_client(make_user())
    assert "24</strong> pairs waiting" in client.get("/").content.decode()
    _label(client)
    assert "23</strong> pairs waiting" in client.get("/").content.decode()


# --- labels in and out ------------------------------------------------------------------------


def test_labels_export_as_suite_file_yaml_that_validates_and_import_back(run, tmp_path):
    client = member_client(make_user(username="ann"))
    for choice in ("left", "right", "tie"):
        _label(client, choice, note="why")
    exported = client.get("/suites/blind/labels.yaml").content.decode()

    suite_text = run.suite_version.yaml_text + exported
    loaded = parse_suite(suite_text.encode(), filename="blind.yaml", origin="upload")
    assert len(loaded.labels) == 3 and {lab.labeller for lab in loaded.labels} == {"ann"}

    Label.objects.all().delete()
    response = client.post("/suites/blind/labels/import/", {"yaml": exported})
    assert response.status_code == 302
    assert Label.objects.filter(source="import").count() == 3
    assert set(Label.objects.values_list("labeller_name", flat=True)) == {"ann"}


def test_a_bad_labels_file_names_every_problem_and_stores_nothing(run):
    client = member_client(make_user())
    bad = (
        "labels:\n"
        "  - {task: alpha, case: c00, baseline: scripted/base, candidate: scripted/cand, prefer: maybe}\n"
        "  - {task: alpha, case: nope, baseline: scripted/base, candidate: scripted/cand, prefer: tie}\n"
        "  - {task: alpha, case: c01, baseline: scripted/base, candidate: scripted/cand, prefer: tie, extra: 1}\n"
    )
    response = client.post("/suites/blind/labels/import/", {"yaml": bad}, follow=True)
    page = response.content.decode()
    assert "labels[0]: prefer must be baseline, candidate or tie" in page
    assert "labels[1]: run " in page and "no pair alpha/nope" in page
    assert "labels[2]: unknown key" in page
    assert not Label.objects.exists()


def test_labels_cli_export_and_import(run, tmp_path):
    from django.core.management import call_command

    client = member_client(make_user(username="ann"))
    _label(client, "left")
    out = tmp_path / "labels.yaml"
    call_command("labels", "export", "blind", "--out", str(out))
    Label.objects.all().delete()
    call_command("labels", "import", "blind", str(out))
    assert Label.objects.get().labeller_name == "ann"
    assert Decision.objects.count() == 0 and Judgement.objects.exists()


def test_a_suites_labelled_pairs_become_a_pair_set_whose_figures_match_the_runs_calibration(run):
    from django.core.management import call_command

    from lab.judges import lab_report
    from lab.models import PairSet

    ann, bob = make_user(username="ann"), make_user(username="bob")
    with override_settings(EVALSITE_LABEL_OVERLAP=1.0):
        for member, choices in ((ann, "lrtlrlrr"), (bob, "lrtrrltl")):
            client = member_client(member)
            for letter in choices:
                _label(client, {"l": "left", "r": "right", "t": "tie"}[letter])
    report = write_report(Run.objects.get(pk=run.pk))

    call_command("pairs", "from-suite", "blind")

    pairset = PairSet.objects.get(name="blind-labelled")
    figures = lab_report(pairset)
    combined = figures["judges"]["scripted/judge"]["combined"]
    calibration = report["calibration"]
    # the same pairs, the same strict-majority consensus, the same judge: the same kappa
    assert pairset.items.count() == 8
    assert combined["n"] == calibration["n"]
    assert combined["kappa"] == pytest.approx(calibration["kappa"])
    assert figures["humans"]["pairwise"]["ann~bob"] == pytest.approx(
        calibration["humans"]["pairwise"]["ann~bob"]
    )


def test_the_calibration_page_opens_the_labelled_pairs_in_the_judge_lab(run):
    client = member_client(make_user(username="ann"))
    for _ in range(3):
        _label(client, "left")

    response = client.post("/suites/blind/to-lab/")

    assert response.status_code == 302 and response["Location"].startswith("/lab/")
    page = client.get(response["Location"]).content.decode()
    assert "scripted/judge" in page


VARIANT_SUITE = """\
suite: blindv
version: 1
models: [scripted/base, scripted/base@french]
judge: {model: scripted/judge}
variants:
  french: {prompt: "Say hello to {{name}} in French."}
tasks:
  - id: hello
    prompt: "Say hello to {{name}} in English."
    cases: [{id: ana, vars: {name: Ana}}]
"""


def test_a_pair_of_two_prompts_shows_the_labeller_each_sides_prompt_above_its_answer():
    """The labeller sees what the judge sees (issue 28 item 1): a base answer and a
    variant's answer were sent different prompts, so each is shown beside its answer."""
    PriceTable.objects.ensure_default()
    version = make_suite_version(VARIANT_SUITE)
    run = make_run(
        suite_version=version, contestants=["scripted/base", "scripted/base@french"],
        status=Run.Status.DONE, report={"headline_eligible": False},
    )  # fmt: skip
    make_pair(run, "hello", "ana", texts=("Hello Ana", "Bonjour Ana"))
    html = member_client(make_user(username="ann")).get("/label/blindv/").content.decode()
    body = html.split("<main>", 1)[1]
    assert "The two answers were sent different prompts" in body
    english, french = body.index("in English."), body.index("in French.")
    hello, bonjour = body.index("Hello Ana"), body.index("Bonjour Ana")
    # each prompt sits just above its own answer, whichever side the answer is on
    assert sorted([english, hello, french, bonjour]) in (
        [english, hello, french, bonjour], [french, bonjour, english, hello],
    )  # fmt: skip
