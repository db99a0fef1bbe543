"""The suite page's new-run form (issue 15): variants, scripted contestants with an uploaded
replies file, a judge override, repeats and the cap, all planned by the planner `evalsite run`
uses; a key the server lacks is named; the suite's runs sit near the top of its page; the
dashboard's empty state offers a first run; status badges follow the run's phase."""

from __future__ import annotations

import html
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, override_settings
from django.urls import reverse

from runs.models import Run, SuiteVersion
from runs.planning.launch import contestant_choices
from tests.helpers.factories import make_price_table, make_run, make_suite_version, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
pytestmark = pytest.mark.django_db

SUITE = """\
suite: formy
version: 1
models: [fake/small, fake/large]
judge: {model: fake/large}
variants:
  concise: {system: "Answer in as few words as will do."}
tasks:
  - id: greet
    kind: rewrite
    prompt: "Say hello to {{who}}."
    cases:
      - {id: one, vars: {who: Ada}}
      - {id: two, vars: {who: Grace}}
"""

VERDICT = '{"reason": "Answer 2 greets by name.", "winner": "2"}'
REPLIES = f"""\
good:
  greet/one: ["Hello, Ada."]
  greet/two: ["Hello, Grace."]
sloppy:
  greet/one: ["hi"]
  greet/two: ["hi"]
judge:
  judge/greet/one: ['{VERDICT}', '{VERDICT}']
  judge/greet/two: ['{VERDICT}', '{VERDICT}']
"""


@pytest.fixture
def member():
    client = Client()
    client.force_login(make_user(username="member"))
    return client


@pytest.fixture(autouse=True)
def _no_queue(monkeypatch):
    # whichever broker is configured: the launch is what is tested here, not the workers
    monkeypatch.setattr("runs.engine.tasks.async_task", lambda *args, **kw: None)


class _Inputs(HTMLParser):
    """The new-run form's inputs as a browser would submit them: name → value, a ticked
    checkbox as "on", an unticked one left out."""

    def __init__(self):
        super().__init__()
        self.fields: dict[str, str] = {}
        self.inside = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section" and attrs.get("id") == "new-run":
            self.inside = True
        if not self.inside or tag != "input" or "name" not in attrs:
            return
        if attrs.get("type") == "checkbox":
            if "checked" in attrs:
                self.fields[attrs["name"]] = "on"
        else:
            self.fields[attrs["name"]] = attrs.get("value") or ""


def _form_fields(page: str) -> dict[str, str]:
    parser = _Inputs()
    parser.feed(page)
    return parser.fields


def _version(text: str = SUITE) -> SuiteVersion:
    make_price_table(
        {"fake/small": ("0.10", "0.40"), "fake/large": ("1", "4"),
         "anthropic/claude-haiku-4-5": ("1", "5")},
        active=True,
    )  # fmt: skip
    return make_suite_version(text)


def _urls(version: SuiteVersion) -> tuple[str, str]:
    args = [version.suite.name, version.sha256]
    return reverse("run_new", args=args), reverse("run_estimate", args=args)


def _rows(member, version) -> list[str]:
    """The contestant rows of the form, in order (as `pick_<n>` numbers them)."""
    response = member.get(reverse("suite_detail", args=[version.suite.name]))
    return response.context["run_form"].choices


def _pick(rows: list[str], *contestants: str, **extra) -> dict:
    data = {}
    for position, contestant in enumerate(contestants, start=1):
        index = rows.index(contestant)
        data |= {f"pick_{index}": "on", f"order_{index}": str(position)}
    return data | extra


def _replies(text: str = REPLIES) -> SimpleUploadedFile:
    return SimpleUploadedFile("replies.yaml", text.encode())


def test_the_form_offers_each_suite_model_with_each_variant_and_launches_a_variant_run(member):
    version = _version()
    rows = _rows(member, version)
    run_new, _ = _urls(version)

    response = member.post(
        run_new, _pick(rows, "fake/small", "fake/small@concise", fake="on", label="variant")
    )

    assert rows[:4] == ["fake/small", "fake/large", "fake/small@concise", "fake/large@concise"]
    run = Run.objects.get(label="variant")
    assert response.status_code == 302 and run.contestants == ["fake/small", "fake/small@concise"]
    requests = {a.contestant: a.request for a in run.answers.filter(case_id="one")}
    assert "as few words" in str(requests["fake/small@concise"])
    assert "as few words" not in str(requests["fake/small"])


def test_an_unknown_variant_typed_in_is_refused_with_the_planners_suggestion(member):
    version = _version()
    run_new, _ = _urls(version)

    response = member.post(run_new, {"others": "fake/small, fake/large@consise", "fake": "on"})

    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert "unknown variant '@consise' in 'fake/large@consise' - did you mean '@concise'?" in page
    assert not Run.objects.exists()


def test_scripted_contestants_answer_from_an_uploaded_replies_file(member, settings):
    version = _version()
    run_new, _ = _urls(version)
    data = {"others": "scripted/sloppy, scripted/good", "label": "scripted"}

    response = member.post(run_new, data | {"replies": _replies()})

    run = Run.objects.get(label="scripted")
    assert response.status_code == 302 and run.contestants == ["scripted/sloppy", "scripted/good"]
    assert run.options["replies"].startswith(str(settings.DATA_DIR / "replies"))
    assert "Hello, Ada." in Path(run.options["replies"]).read_text()


def test_a_replies_file_without_a_contestants_case_names_the_case(member):
    version = _version()
    run_new, _ = _urls(version)
    short = REPLIES.replace('  greet/two: ["hi"]\n', "")

    response = member.post(
        run_new, {"others": "scripted/sloppy, scripted/good", "replies": _replies(short)}
    )

    assert response.status_code == 400
    assert "has no reply for scripted/sloppy on: greet/two" in response.content.decode()


def test_a_suite_loaded_from_disk_lists_the_scripted_contestants_of_its_replies_file(
    member, tmp_path
):
    from evalsite.core.suites import load_suite

    _version()
    path = tmp_path / "formy.yaml"
    path.write_text(SUITE + "replies: formy.replies.yaml\n")
    (tmp_path / "formy.replies.yaml").write_text(REPLIES)
    version, _ = SuiteVersion.objects.register_file(path, load_suite(path))

    page = member.get(reverse("suite_detail", args=["formy"]))

    assert {"scripted/good", "scripted/sloppy"} <= set(page.context["run_form"].choices)
    assert "scripted/judge" not in page.context["run_form"].choices
    assert page.context["run_form"].judges[0] == "scripted/judge"
    assert '<option value="scripted/judge">' in page.content.decode()


def test_the_judge_override_is_the_runs_judge_and_the_estimate_names_it(member):
    version = _version()
    run_new, estimate = _urls(version)
    data = {
        "others": "scripted/sloppy, scripted/good",
        "judge": "scripted/judge",
        "label": "judged",
    }

    fragment = member.post(estimate, data | {"replies": _replies()}, **HTMX).content.decode()
    response = member.post(run_new, data | {"replies": _replies()})

    assert "judge <code>scripted/judge</code>: 4 calls" in fragment
    assert response.status_code == 302
    assert Run.objects.get(label="judged").judge["model"] == "scripted/judge"


def test_an_unpriced_judge_is_refused_with_the_planners_message(member):
    version = _version()
    run_new, _ = _urls(version)

    response = member.post(
        run_new, {"pick_0": "on", "pick_1": "on", "fake": "on", "judge": "openai/gpt-nope"}
    )

    assert response.status_code == 400
    assert "openai/gpt-nope" in response.content.decode() and not Run.objects.exists()


def test_repeats_run_from_1_to_20_as_on_the_command_line(member):
    version = _version()
    run_new, estimate = _urls(version)
    picked = {"pick_0": "on", "pick_1": "on", "fake": "on"}

    fragment = member.post(estimate, picked | {"repeats": "3"}, **HTMX).content.decode()
    three = member.post(run_new, picked | {"repeats": "3", "label": "three"})
    too_many = member.post(run_new, picked | {"repeats": "21"})
    none = member.post(run_new, picked | {"repeats": "0"})

    assert "<code>fake/small</code>: 6 calls" in fragment  # 2 cases x 3 repeats
    assert three.status_code == 302 and Run.objects.get(label="three").repeats == 3
    assert Run.objects.get(label="three").answers.count() == 12
    for refused in (too_many, none):
        assert refused.status_code == 400
        assert "repeats must be between 1 and 20" in refused.content.decode()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("1e400", "the cap $1e400 is over the largest cap, $100000"),
        ("-1", "the cap must be a positive number of USD"),
        ("two dollars", "the cap &#x27;two dollars&#x27; is not a number of USD"),
        ("0.0000001", "the cap has more than 6 decimal places: 0.0000001"),
    ],
)
def test_a_cap_is_read_by_the_rule_of_max_cost_with_its_words(member, given, message):
    version = _version()
    run_new, _ = _urls(version)

    response = member.post(run_new, {"pick_0": "on", "pick_1": "on", "fake": "on",
                                     "max_cost": given})  # fmt: skip

    assert response.status_code == 400 and message in response.content.decode()
    assert not Run.objects.exists()


def test_a_cap_in_bounds_is_the_runs_cap_and_the_estimates(member):
    version = _version()
    run_new, estimate = _urls(version)
    picked = {"pick_0": "on", "pick_1": "on", "fake": "on", "max_cost": "0.75"}

    fragment = member.post(estimate, picked, **HTMX).content.decode()
    member.post(run_new, picked | {"label": "capped"})

    assert "against a cap of $0.7500" in fragment
    assert str(Run.objects.get(label="capped").cap_usd) == "0.750000"


def test_a_key_the_server_lacks_is_named_and_nothing_is_stored(member, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    version = _version()
    rows = _rows(member, version)
    run_new, estimate = _urls(version)
    data = _pick(rows, "fake/small", "anthropic/claude-haiku-4-5")

    fragment = member.post(estimate, data, **HTMX).content.decode()
    response = member.post(run_new, data)

    expected = (
        "ANTHROPIC_API_KEY is not set in the server&#x27;s environment "
        "(needed for anthropic/claude-haiku-4-5)"
    )
    assert expected in fragment and "Estimate: $" in fragment
    assert response.status_code == 400 and expected in response.content.decode()
    assert not Run.objects.exists()


def test_with_the_keys_on_the_workers_a_run_launches_without_the_key_here(member, monkeypatch):
    # Scale-out (docs/scale-out.md): the keys live on the worker hosts only.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    version = _version()
    rows = _rows(member, version)
    run_new, _ = _urls(version)
    data = _pick(rows, "fake/small", "anthropic/claude-haiku-4-5", label="on-workers")

    with override_settings(EVALSITE_KEYS_ON_WORKERS=True):
        response = member.post(run_new, data)

    assert response.status_code == 302
    assert Run.objects.get(label="on-workers").status == Run.Status.QUEUED


def test_with_the_key_set_the_same_choices_launch(member, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    version = _version()
    rows = _rows(member, version)
    run_new, _ = _urls(version)

    response = member.post(
        run_new, _pick(rows, "fake/small", "anthropic/claude-haiku-4-5", label="keyed")
    )

    assert response.status_code == 302
    run = Run.objects.get(label="keyed")
    assert run.contestants == ["fake/small", "anthropic/claude-haiku-4-5"]
    assert "sk-test" not in str(run.options)


def test_the_suite_page_shows_its_runs_above_the_new_run_form_and_the_tasks(member):
    version = _version()
    run = make_run(suite_version=version, label="listed", status=Run.Status.JUDGING)

    page = member.get(reverse("suite_detail", args=[version.suite.name])).content.decode()

    runs, form, tasks = (page.index(s) for s in ('id="suite-runs"', 'id="new-run"', "<h2>Tasks"))
    assert runs < form < tasks
    listed = page[runs:form]
    assert run.id in listed and "listed" in listed
    assert '<span class="status status-judging">Judging</span>' in listed


def test_the_empty_dashboard_offers_a_first_run_of_the_demo_suite(member):
    make_suite_version()  # another suite, listed first
    demo = _version(SUITE.replace("suite: formy", "suite: zdemo"))
    SuiteVersion.objects.filter(pk=demo.pk).update(origin=SuiteVersion.Origin.DEMO)

    page = member.get("/").content.decode()

    assert 'id="first-run"' in page and "Start a first run of zdemo" in page
    preset = "?models=scripted%2Fsloppy%2Cscripted%2Fgood&amp;judge=scripted%2Fjudge"
    assert f'href="/suites/zdemo/{preset}#new-run"' in page  # the demo's offline first run


def test_the_empty_dashboard_offers_another_suite_its_own_contestants(member):
    make_suite_version()

    page = member.get("/").content.decode()

    assert 'href="/suites/tiny/#new-run"' in page and "scripted/sloppy" not in page


def test_a_link_presets_the_run_form_with_contestants_and_judge_it_offers(member):
    version = _version()
    url = f"/suites/{version.suite.name}/"
    choices = contestant_choices(version)
    wanted = [choices[1], choices[0]]

    page = member.get(url, {"models": ",".join(wanted), "judge": "fake/small"}).content.decode()
    ignored = member.get(url, {"models": "evil/x,fake/small", "judge": "evil/j"}).content.decode()

    form = _form_fields(page)
    assert [form[f"order_{choices.index(m)}"] for m in wanted] == ["1", "2"]
    assert all(form.get(f"pick_{choices.index(m)}") == "on" for m in wanted)
    assert form["judge"] == "fake/small"
    # a preset with anything the form does not offer is ignored: the suite's own are ticked
    assert _form_fields(ignored).get("judge", "") == "" and "evil" not in ignored


def test_the_dashboard_offers_no_first_run_once_there_are_runs_and_badges_their_phase(member):
    run = make_run(status=Run.Status.RUNNING)

    page = member.get("/").content.decode()

    assert 'id="first-run"' not in page and run.id in page
    assert '<span class="status status-running">Answering</span>' in page


def test_the_dashboard_without_suites_sends_a_first_run_to_add_one(member):
    page = member.get("/").content.decode()

    assert 'id="first-run"' not in page
    assert f'No runs yet. <a href="{reverse("suite_new")}">Add a suite</a>' in page


def test_the_estimate_names_each_parameter_a_contestant_will_not_be_sent(member):
    # Issue 26: validate and the dry run say it; the web's estimate said nothing.
    version = _version(
        SUITE.replace("version: 1\n", "version: 1\ndefaults: {temperature: 0.2, top_p: 0.9}\n", 1)
    )
    _, estimate = _urls(version)
    picked = {"others": "fake/small, anthropic/claude-haiku-4-5", "fake": "on"}

    fragment = member.post(estimate, picked, **HTMX).content.decode()

    assert (
        "anthropic/claude-haiku-4-5 will not be sent top_p 0.9 (set at defaults.top_p): "
        "anthropic/claude-haiku-4-5 takes temperature or top_p, not both"
    ) in fragment
    assert "fake/small will not be sent" not in fragment


def test_the_estimate_says_a_dated_snapshot_is_priced_as_its_models_row(member):
    # Issue 32: the web form's estimate prices a snapshot by the rule validate and run use.
    version = _version()
    _, estimate = _urls(version)
    picked = {"others": "fake/small, anthropic/claude-haiku-4-5-20251001", "fake": "on"}

    fragment = member.post(estimate, picked, **HTMX).content.decode()

    assert ("<code>anthropic/claude-haiku-4-5-20251001</code>: 2 calls (0 cached), $") in fragment
    assert "(priced as <code>anthropic/claude-haiku-4-5</code>)" in fragment
    assert "Cannot estimate" not in fragment
