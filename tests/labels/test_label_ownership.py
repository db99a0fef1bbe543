"""Whose a label is, and who sees it (issue 13, items 6 and 15).

An imported label belongs to a user of the site: a member's import is all their own (an
entry naming anyone else is refused), staff and the command line may name an existing user,
and an import never replaces someone else's browser label nor lands on another account's
row, so a made-up name can never pose as another human in the agreement figures.

A member never sees another person's label of a pair still waiting for them — not on the
calibration page (the YAML, each labeller against the judge, people against each other) and
not in the labels download — until they have labelled it; staff see every label.
"""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.test import override_settings

from labels.queue import waiting
from labels.transfer import LabelImportError, import_yaml
from runs.models import Label, Pair, Run
from runs.results.calibration import suite_calibration
from tests.helpers.factories import make_judged_run, make_label, make_suite_version, make_user
from tests.helpers.labelling import member_client

pytestmark = pytest.mark.django_db
CASES = [f"c{i}" for i in range(4)]
SUITE = """\
suite: owned
version: 1
models: [fake/small, fake/large]
judge: {{model: fake/large, calibration: {{min_kappa: 0.4, min_labels: 2}}}}
tasks:
  - id: greet
    prompt: "Say hello to {{{{who}}}}."
    cases:
{cases}
labels:
  - {{task: greet, case: c0, baseline: fake/small, candidate: fake/large, prefer: baseline,
     labeller: sue}}
"""


@pytest.fixture
def run() -> Run:
    """A judged run of four cases, the judge preferring the candidate on each; the suite
    file has sue's label of c0."""
    cases = "\n".join(f"      - {{id: {c}, vars: {{who: W{c}}}}}" for c in CASES)
    version = make_suite_version(SUITE.format(cases=cases))
    return make_judged_run({("greet", c): 1.0 for c in CASES}, suite_version=version)


def _pair(run: Run, case: str) -> Pair:
    return Pair.objects.get(run=run, case_id=case)


def _entry(case: str, prefer: str = "baseline", **extra) -> str:
    fields = {"task": "greet", "case": case, "baseline": "fake/small",
              "candidate": "fake/large", "prefer": prefer} | extra  # fmt: skip
    return "  - {" + ", ".join(f"{key}: {value}" for key, value in fields.items()) + "}\n"


def _yaml(*entries: str) -> str:
    return "labels:\n" + "".join(entries)


def _humans(run: Run) -> dict:
    return suite_calibration(run.suite)["humans"]


# --- item 6: an import is the importer's ------------------------------------------------------


def test_a_members_import_naming_bob_is_refused_and_bobs_browser_label_is_unchanged(run):
    ann, bob = make_user(username="ann"), make_user(username="bob")
    theirs = make_label(_pair(run, "c1"), "candidate", labeller=bob, note="bob's own")

    page = (
        member_client(ann)
        .post(
            "/suites/owned/labels/import/",
            {"yaml": _yaml(_entry("c1", "baseline", labeller="bob", note="forged"))},
            follow=True,
        )
        .content.decode()
    )

    assert "uploaded labels: labels[0]: labeller &#x27;bob&#x27; is not you (ann)" in page
    assert list(Label.objects.values_list("pk", "labeller", "labeller_name", "prefer", "note",
                                          "source")) == [
        (theirs.pk, bob.pk, "bob", "candidate", "bob's own", "browser")
    ]  # fmt: skip


def test_made_up_labeller_names_add_no_human_to_the_human_human_figures(run):
    ann, staff = make_user(username="ann"), make_user(username="sam", is_staff=True)
    make_label(_pair(run, "c1"), "candidate", labeller=ann)
    made_up = _yaml(_entry("c1", "baseline", labeller="zed"), _entry("c2", labeller="yan"))

    with pytest.raises(LabelImportError) as as_member:
        import_yaml(run.suite, made_up, user=ann, filename="mine.yaml")
    with pytest.raises(LabelImportError) as as_staff:
        import_yaml(run.suite, made_up, user=staff, filename="theirs.yaml")
    # and ann importing her own label of a pair she labelled is still one person
    assert import_yaml(run.suite, _yaml(_entry("c1", "tie")), user=ann, filename="again.yaml")

    assert as_member.value.problems == [
        "mine.yaml: labels[0]: labeller 'zed' is not you (ann): you can import only your own "
        "labels; leave labeller out or write labeller: ann",
        "mine.yaml: labels[1]: labeller 'yan' is not you (ann): you can import only your own "
        "labels; leave labeller out or write labeller: ann",
    ]
    assert [p.split(": ", 2)[2] for p in as_staff.value.problems] == [
        "labeller 'zed' is not a user of this site: an imported label belongs to an existing user",
        "labeller 'yan' is not a user of this site: an imported label belongs to an existing user",
    ]
    assert list(Label.objects.values_list("labeller_name", "labeller", "prefer")) == [
        ("ann", ann.pk, "tie")
    ]
    assert _humans(run)["n_items"] == 0 and _humans(run)["pairwise"] == {}


def test_staff_import_for_an_existing_user_and_never_over_someone_elses_browser_label(run):
    staff = make_user(username="sam", is_staff=True)
    carol, bob, dave = (make_user(username=name) for name in ("carol", "bob", "dave"))
    make_label(_pair(run, "c1"), "candidate", labeller=bob)
    # a row under dave's name that is not dave's account's (an old import, a deleted user)
    orphan = make_label(_pair(run, "c3"), "tie", labeller=dave)
    Label.objects.filter(pk=orphan.pk).update(labeller=None)

    stored = import_yaml(
        run.suite,
        _yaml(
            _entry("c2", labeller="carol"),
            _entry("c2", "tie"),
            _entry("c1", "candidate", labeller="bob"),
        ),  # fmt: skip
        user=staff,
        filename="team.yaml",
    )
    with pytest.raises(LabelImportError) as refused:
        import_yaml(
            run.suite,
            _yaml(_entry("c1", "baseline", labeller="bob"), _entry("c3", labeller="dave")),
            user=staff,
            filename="team.yaml",
        )

    assert stored == 2  # bob's identical browser label is left as it is
    rows = Label.objects.values_list("case_id", "labeller", "labeller_name", "prefer", "source")
    assert sorted(rows, key=lambda row: (row[0], row[2])) == [
        ("c1", bob.pk, "bob", "candidate", "browser"),
        ("c2", carol.pk, "carol", "baseline", "import"),
        ("c2", staff.pk, "sam", "tie", "import"),
        ("c3", None, "dave", "tie", "browser"),
    ]
    assert refused.value.problems == [
        "team.yaml: labels[0]: bob labelled this pair in the browser (candidate); an import "
        "never replaces someone else's own label",
        "team.yaml: labels[1]: the label under the name 'dave' on this pair belongs to another "
        "account; an import does not replace it",
    ]


def test_the_command_line_imports_for_named_users_or_as_one_user_and_refuses_made_up_names(
    run, tmp_path, capsys
):
    ann = make_user(username="ann")
    file = tmp_path / "labels.yaml"

    file.write_text(_yaml(_entry("c1", labeller="zed"), _entry("c2")))
    with pytest.raises(SystemExit) as exited:
        call_command("labels", "import", "owned", str(file))
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "labels[0]: labeller 'zed' is not a user of this site" in err
    assert "labels[1]: no labeller: name the user the label belongs to, or import with --as" in err

    with pytest.raises(SystemExit):
        call_command("labels", "import", "owned", str(file), "--as", "ann")
    assert "labels[0]: labeller 'zed' is not you (ann)" in capsys.readouterr().err

    file.write_text(_yaml(_entry("c1", labeller="ann"), _entry("c2")))
    call_command("labels", "import", "owned", str(file), "--as", "ann")
    assert sorted(Label.objects.values_list("case_id", "labeller", "labeller_name")) == [
        ("c1", ann.pk, "ann"),
        ("c2", ann.pk, "ann"),
    ]
    with pytest.raises(SystemExit):
        call_command("labels", "import", "owned", str(file), "--as", "nobody")
    assert "--as nobody: no active user of that name" in capsys.readouterr().err
    assert not Label.objects.exclude(labeller=ann).exists()


def test_an_import_over_a_members_own_label_keeps_the_queue_and_probability_it_was_given_in(run):
    """Changing one's mind by file is changing one's mind: the label keeps how its pair was
    picked, as a label changed in the browser does. A targeted label made a sample one would
    enter the headline kappa (its pairs were picked where the judge looked wrong)."""
    ann = make_user(username="ann")
    make_label(_pair(run, "c1"), "candidate", labeller=ann, mode="targeted")
    make_label(_pair(run, "c2"), "candidate", labeller=ann, mode="sample", probability=0.25)

    file = _yaml(_entry("c1", "baseline"), _entry("c2", "tie"), _entry("c3", probability=0.5))
    assert import_yaml(run.suite, file, user=ann, filename="mine.yaml") == 3

    stored = Label.objects.filter(labeller=ann).order_by("case_id")
    assert list(stored.values_list("case_id", "prefer", "source", "mode", "probability")) == [
        ("c1", "baseline", "import", "targeted", None),
        ("c2", "tie", "import", "sample", 0.25),
        ("c3", "baseline", "import", "sample", 0.5),
    ]
    # A label the file itself made takes the file's word again, probability included.
    assert import_yaml(run.suite, _yaml(_entry("c3", probability=0.2)), user=ann, filename="b")
    assert stored.get(case_id="c3").probability == 0.2


# --- item 15: no peeking at a pair still waiting for you ------------------------------------


def _shown_labels(html: str) -> str:
    """The labels YAML of the calibration page (autoescaped text)."""
    return re.search(r'(?s)<textarea id="labels-yaml"[^>]*>(.*?)</textarea>', html).group(1)


def _labeller_row(html: str, name: str) -> str | None:
    table = html.split("<h2>Each labeller against the judge</h2>", 1)[1].split("</table>", 1)[0]
    found = re.search(rf'<tr><td>{name}</td><td class="num">(\d+)</td>', table)
    return found.group(1) if found else None


def _headline(html: str) -> str:
    return re.search(r'(?s)<p class="figures">(.*?)</p>', html).group(1)


def _humans_section(html: str) -> str:
    return html.split('id="humans"', 1)[1].split("</section>", 1)[0]


@override_settings(EVALSITE_LABEL_OVERLAP=1.0)  # every pair also goes to a second labeller
def test_a_member_sees_no_trace_of_a_label_on_a_pair_still_waiting_for_them(run):
    ann, bob = make_user(username="ann"), make_user(username="bob")
    staff = make_user(username="sam", is_staff=True)
    # ann labels c0 (sue's suite-file label is there too) and c1; bob has labelled c1
    make_label(_pair(run, "c0"), "tie", labeller=ann, note="ann-secret-c0")
    make_label(_pair(run, "c1"), "candidate", labeller=ann, note="ann-open-c1")
    make_label(_pair(run, "c1"), "candidate", labeller=bob)
    assert _pair(run, "c0").pk in waiting(run.suite, bob)

    page = member_client(bob).get("/suites/owned/calibration/").content.decode()
    download = member_client(bob).get("/suites/owned/labels.yaml").content.decode()
    for shown in (_shown_labels(page), download):
        assert "ann-secret-c0" not in shown and "case: c0" not in shown
        assert "ann-open-c1" in shown  # ann's label of a pair bob has labelled shows
    assert "ann-secret-c0" not in page
    assert _labeller_row(page, "ann") == "1"  # only c1 counts
    assert "ann~sue" not in _humans_section(page)
    assert "ann~bob" in _humans_section(page)
    assert "left out of this table" in page

    # staff see everything, ann her own labels; the headline figures count every label
    for viewer in (staff, ann):
        everything = member_client(viewer).get("/suites/owned/calibration/").content.decode()
        assert _headline(everything) == _headline(page)
        assert "ann-secret-c0" in _shown_labels(everything)
        assert _labeller_row(everything, "ann") == "2"
        assert "ann~sue" in _humans_section(everything)
        assert (
            "ann-secret-c0"
            in member_client(viewer).get("/suites/owned/labels.yaml").content.decode()
        )

    # once bob has labelled c0 himself, ann's label of it may show to him
    make_label(_pair(run, "c0"), "baseline", labeller=bob)
    after = member_client(bob).get("/suites/owned/calibration/").content.decode()
    assert "ann-secret-c0" in _shown_labels(after)
    assert _labeller_row(after, "ann") == "2" and "ann~sue" in _humans_section(after)
    assert "left out of this table" not in after
