"""Issue 28 item 11: calibration's n counts the judgements about a case, whatever the
repeats. A browser label and a suite-file label on one case are one item (each labeller
once), with 1 repeat or 3; the report and the live calibration are built by one builder."""

from __future__ import annotations

import pytest

from runs.models import Pair, Run
from runs.results.calibration import calibration_of
from runs.results.reporting import compute_report
from tests.helpers.factories import make_label, make_user, run_command, write_scripted_suite

pytestmark = pytest.mark.django_db(transaction=True)

CASES = 6
LABELLED = "ann"
SUITE = (
    "suite: labelled-repeats\n"
    "version: 1\n"
    "models: [fake/small, fake/large]\n"
    "judge: {model: fake/large, calibration: {min_kappa: 0.4, min_labels: 4}}\n"
    "tasks:\n"
    "  - id: greet\n"
    '    prompt: "Say hello to {{who}}."\n'
    "    cases:\n"
    + "".join(f"      - {{id: c{i}, vars: {{who: W{i}}}}}\n" for i in range(CASES))
    + "labels:\n"
    + "".join(
        f"  - {{task: greet, case: c{i}, baseline: fake/small, candidate: fake/large, "
        "prefer: candidate}\n"
        for i in range(CASES)
    )
)


def test_browser_and_suite_labels_on_one_case_are_one_judgement_at_any_repeats(tmp_path):
    path = write_scripted_suite(tmp_path, SUITE, "{}\n")
    for repeats in ("1", "3"):
        code, _, err = run_command("run", str(path), "--fake", "--repeats", repeats)
        assert code == 0, err
    once, thrice = Run.objects.order_by("created_at")
    assert Pair.objects.filter(run=thrice).count() == 3 * Pair.objects.filter(run=once).count()
    # a member labels every pair of the first four cases in the browser, in both runs
    member = make_user(username=LABELLED)
    labelled = set()
    for pair in Pair.objects.filter(case_id__in=["c0", "c1", "c2", "c3"]).order_by("pk"):
        content = (pair.case_id, pair.baseline_sha, pair.candidate_sha)
        if content not in labelled:  # a label is bound to the answers: one per content
            labelled.add(content)
            make_label(pair, "candidate", labeller=member)
    # the fake answers each repeat differently: more contents than cases
    assert len(labelled) > 4

    for run in (once, thrice):
        run.refresh_from_db()
        live = calibration_of(run)
        report = compute_report(run)["calibration"]
        judged_cases = {
            p.case_id for p in Pair.objects.filter(run=run, excluded_reason="", score__isnull=False)
        }
        # one judgement per case: the suite file's and ann's labels are one item
        assert live["n"] == report["n"] == len(judged_cases) == CASES, run.repeats
        assert live["labels_used"] == report["labels_used"]
        assert live["labels_used"]["suite_file"] == CASES
        assert live["labels_used"]["browser"] == 4  # ann, once per case
