"""Forms for the suite, run and decision pages."""

from __future__ import annotations

import dataclasses
import datetime as dt
import pathlib
import secrets
import time
from dataclasses import dataclass
from decimal import Decimal

from django import forms
from django.core import signing

from evalsite.core.importers import Translation, translate_upload
from evalsite.core.importers.common import identifier, render_suite
from evalsite.core.input_limits import sent_size_message
from evalsite.core.money import MoneyError, parse_cap
from evalsite.core.suites import Problem, Suite, SuiteError, parse_suite
from evalsite.core.yamlsafe import MAX_BYTES
from runs.models import Decision, Run, SuiteVersion
from runs.models.run import MAX_LABEL, label_problem
from runs.planning.validation import model_errors

_SALT = "runs.forms.FormToken"


@dataclass(frozen=True)
class FormToken:
    """One rendering of a form: a random nonce and when it was issued, signed with the
    secret key so neither can be made up; the same rendering posted twice (a double click, a
    resent request) stores once (SPEC §16). A run keeps the nonce in its options; a decision,
    with no column for it, is matched by member, words and the time the form was issued."""

    nonce: str
    issued_at: dt.datetime

    @staticmethod
    def new() -> str:
        return signing.dumps({"n": secrets.token_urlsafe(12), "t": time.time()}, salt=_SALT)

    @classmethod
    def read(cls, value: str) -> FormToken | None:
        """The token in ``value``; None for one that is missing, altered or malformed."""
        try:
            data = signing.loads(value, salt=_SALT)
            return cls(str(data["n"]), dt.datetime.fromtimestamp(float(data["t"]), dt.UTC))
        except (signing.BadSignature, KeyError, TypeError, ValueError):
            return None


class FormTokenField(forms.CharField):
    """A hidden field holding a fresh :class:`FormToken`; cleans to the token or None (a form
    posted without one, or with a bad one, is stored as before: never refused for it)."""

    widget = forms.HiddenInput

    def __init__(self, **kwargs):
        super().__init__(required=False, initial=FormToken.new, **kwargs)

    def clean(self, value) -> FormToken | None:
        return FormToken.read(super().clean(value) or "")


class CapField(forms.CharField):
    """A spending cap in USD by the rule and with the words of `--max-cost` (money.parse_cap,
    which reads every cap); None when left blank."""

    def __init__(self, **kwargs) -> None:
        super().__init__(required=False, **kwargs)

    def clean(self, value) -> Decimal | None:
        text = super().clean(value).strip()
        if not text:
            return None
        try:
            return parse_cap(text, what="the cap")
        except MoneyError as error:
            raise forms.ValidationError(str(error)) from None


class SuiteForm(forms.Form):
    """A suite pasted or uploaded in the browser: validated as an upload (no file access,
    no python checks); `problems` holds every problem found, by line. Another tool's file is
    translated and registered in one step, named `name` (made an identifier), else after
    the uploaded file ("My Evals.yaml": my-evals), never after a folder on the server."""

    CHECK = "check"
    REGISTER = "register"

    yaml_text = forms.CharField(
        label="Suite YAML",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false", "autocomplete": "off"}),
    )
    file = forms.FileField(label="or upload a file", required=False)
    name = forms.CharField(
        label="Name", required=False, max_length=200,
        help_text="of an imported file's suite; blank: the file's name",
        widget=forms.TextInput(attrs={"placeholder": "e.g. support-desk", "autocomplete": "off"}),
    )  # fmt: skip
    intent = forms.ChoiceField(
        choices=[(CHECK, CHECK), (REGISTER, REGISTER)], initial=REGISTER, required=False
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.suite: Suite | None = None
        self.problems: list[Problem] = []
        self.source_name = "pasted suite"
        self.uploaded = ""  # the uploaded file's name, as the member's computer gave it
        self.text = ""
        self.translation: Translation | None = None  # another tool's file, translated
        self.translated_text = ""

    @classmethod
    def too_big(cls, sent: int | None) -> SuiteForm:
        """The empty form for a request of ``sent`` bytes over Django's limit (a huge paste),
        with the size message a paste just over the suite limit gets."""
        form = cls()
        form.problems = [Problem(form.source_name, None, "", sent_size_message(sent))]
        return form

    def clean_intent(self) -> str:
        return self.cleaned_data.get("intent") or self.REGISTER

    def clean(self):
        cleaned = super().clean()
        data = self._suite_bytes(cleaned)
        if data is None:
            return cleaned
        data = self._translated(data)
        if data is None:
            raise forms.ValidationError(f"{self.source_name} could not be translated.")
        try:
            self.suite = parse_suite(
                data, filename=self.source_name, base_dir=None, origin="upload"
            )
        except SuiteError as exc:
            self.problems = sorted(exc.problems, key=lambda p: (p.file, p.line or 0))
        else:
            errors, _ = model_errors(self.suite)
            self.problems = [Problem(self.source_name, None, "", e) for e in errors]
            self.text = data.decode("utf-8")
        if self.problems:
            self.suite = None
            raise forms.ValidationError(
                f"The suite has {len(self.problems)} problem(s); nothing was registered."
            )
        return cleaned

    def _suite_bytes(self, cleaned) -> bytes | None:
        upload = cleaned.get("file")
        if upload is not None:
            if upload.size > MAX_BYTES:
                self.add_error(
                    "file", f"The file is {upload.size:,} bytes; the limit is {MAX_BYTES:,}."
                )
                return None
            self.source_name = self.uploaded = upload.name
            return upload.read()
        text = cleaned.get("yaml_text") or ""
        if not text.strip():
            if cleaned.get("intent") == self.REGISTER:
                self.add_error("yaml_text", "Paste a suite or choose a file.")
            return None
        return text.encode("utf-8", errors="surrogatepass")

    def _translated(self, data: bytes) -> bytes | None:
        """An evalpin, evaling, evalblink or promptfoo file as evalsite's YAML, kept for the
        preview (docs/importing.md); an evalsite suite unchanged; None when it cannot be."""
        try:
            self.translation = translate_upload(data, self.source_name)
        except SuiteError as exc:
            self.problems = list(exc.problems)
            return None
        if self.translation is None:
            return data
        if self.translation.suite_file is None:
            message = "an evalpin results file is a baseline, not a suite: `evalsite import`"
            self.problems = [Problem(self.source_name, None, "", message)]
            return None
        self.translation = self._named(self.translation)
        self.source_name = self.translation.suite_file or self.source_name
        self.translated_text = render_suite(self.translation)
        return self.translated_text.encode("utf-8")

    def _named(self, translation: Translation) -> Translation:
        """The translated suite named as the member typed it, else after the uploaded file;
        a pasted one keeps the name its tool gave it."""
        stem = identifier(pathlib.PurePath(self.uploaded).stem, "") if self.uploaded else ""
        wanted = (self.cleaned_data.get("name") or "").strip()
        name = identifier(wanted, stem) if wanted else stem
        if not name or translation.suite is None:
            return translation
        suite = {**translation.suite, "suite": name}
        return dataclasses.replace(translation, suite=suite, suite_file=f"{name}.yaml")

    @property
    def wants_registration(self) -> bool:
        """Register: a suite that reads, another tool's translated as well (one click)."""
        return self.cleaned_data.get("intent") == self.REGISTER and self.suite is not None

    def preview(self) -> SuiteForm:
        """The page after a translation: the translated YAML in the editor, to register as
        any pasted suite once read; what did not translate listed beside it."""
        form = SuiteForm(initial={"yaml_text": self.translated_text})
        form.translation, form.translated_text = self.translation, self.translated_text
        form.suite, form.problems, form.source_name = self.suite, self.problems, self.source_name
        return form

    def register(self, user) -> tuple[SuiteVersion, bool]:
        assert self.suite is not None
        return SuiteVersion.objects.register(
            self.suite, self.text, origin=SuiteVersion.Origin.UPLOAD, user=user
        )

    @property
    def warnings(self) -> list[Problem]:
        return list(self.suite.warnings) if self.suite else []


class RunForm(forms.Form):
    """A new run from the suite page: what `evalsite run` takes, checked as it checks it.

    Contestants are picked from `choices` (the suite's own, its models with each variant,
    scripted contestants, every priced model), each with a position: the lowest position is
    the baseline; `others` adds any contestant not listed, after the picked ones. Works as
    a plain form; htmx posts it for the live estimate."""

    MAX_REPLIES_BYTES = 2 * 1024 * 1024
    REPEATS = "repeats must be between 1 and 20"

    others = forms.CharField(
        required=False, max_length=2000, label="Other contestants",
        help_text="model or model@variant, comma-separated; after the ticked ones",
        widget=forms.TextInput(attrs={"placeholder": "e.g. scripted/good", "autocomplete": "off"}),
    )  # fmt: skip
    judge = forms.CharField(
        required=False, max_length=300, label="Judge",
        help_text="blank: the suite's judge; e.g. scripted/judge with a replies file",
    )  # fmt: skip
    fake = forms.BooleanField(required=False, label="Fake answers (offline, simulated cost)")
    replies = forms.FileField(
        required=False, label="Replies file (scripted/… contestants or judge)"
    )
    repeats = forms.IntegerField(
        required=False, min_value=1, max_value=20,
        error_messages={"min_value": REPEATS, "max_value": REPEATS, "invalid": REPEATS},
    )  # fmt: skip
    max_cost = CapField(label="Cap (USD)")
    label = forms.CharField(
        required=False, max_length=MAX_LABEL,
        widget=forms.TextInput(attrs={"placeholder": "e.g. demo first run", "autocomplete": "off"}),
    )  # fmt: skip
    form_token = FormTokenField()
    # the fields in the order the page shows them: the first with an error takes the focus
    SHOWN = ("others", "replies", "judge", "repeats", "max_cost", "label")

    def __init__(self, *args, choices: list[str], defaults: list[str], judges=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.choices = choices
        self.judges = list(judges)
        for index, model in enumerate(choices):
            position = defaults.index(model) + 1 if model in defaults else None
            self.fields[f"pick_{index}"] = forms.BooleanField(
                required=False, initial=position is not None, label=model
            )
            self.fields[f"order_{index}"] = forms.IntegerField(
                required=False, min_value=1, max_value=99, initial=position
            )

    def contestant_rows(self):
        """(model, pick field, order field) for the template, in the listing's order."""
        return [
            (model, self[f"pick_{i}"], self[f"order_{i}"]) for i, model in enumerate(self.choices)
        ]

    def problems(self) -> list[tuple[str, str, str]]:
        """(what, the id of its input or "", message) for every error, in the page's order:
        what the estimate says it cannot estimate for."""
        rows = [("Contestants", "", str(e)) for e in self.non_field_errors()]
        for index, model in enumerate(self.choices):
            for name in (f"pick_{index}", f"order_{index}"):
                rows += [(f"Position of {model}", self[name].auto_id, str(e))
                         for e in self[name].errors]  # fmt: skip
        for name in self.SHOWN:
            rows += [(str(self[name].label), self[name].auto_id, str(e)) for e in self[name].errors]
        return rows

    @property
    def first_invalid(self) -> str:
        """The name of the first field shown with an error ("" when none): it takes the focus."""
        names = [f"order_{i}" for i in range(len(self.choices))] + list(self.SHOWN)
        return next((name for name in names if self[name].errors), "")

    def mark_invalid(self) -> None:
        """Each input with an error says so (aria-invalid, described by its message); the
        first one shown takes the focus when the page loads."""
        for name in self.SHOWN:
            if self[name].errors:
                attrs = self.fields[name].widget.attrs
                attrs["aria-invalid"], attrs["aria-describedby"] = (
                    "true",
                    f"{self[name].auto_id}_error",
                )
        first = self.first_invalid
        if first in self.SHOWN and first != "judge":  # the judge's input and the positions
            self.fields[first].widget.attrs["autofocus"] = True  # are written in the template

    def clean_label(self) -> str:
        """The label by the rule of `evalsite run --label` (never one that hides a run id):
        any words, as the command line takes them ("demo first run")."""
        label = self.cleaned_data["label"]
        if problem := label_problem(label):
            raise forms.ValidationError(problem)
        return label

    def clean(self):
        super().clean()
        data = self.cleaned_data  # what Form.clean returns
        picked = []
        for index, model in enumerate(self.choices):
            if data.get(f"pick_{index}"):
                order = data.get(f"order_{index}") or 99
                picked.append((order, index, model))
        others = [text.strip() for text in (data.get("others") or "").split(",")]
        data["contestants"] = [model for _, _, model in sorted(picked)] + list(filter(None, others))
        if not data["contestants"]:
            raise forms.ValidationError(
                "Pick a contestant, or two or more to compare them; the first is the baseline."
            )
        replies = data.get("replies")
        if replies is not None and replies.size > self.MAX_REPLIES_BYTES:
            self.add_error("replies", "The replies file is over 2 MB.")
        data["judge"] = (data.get("judge") or "").strip()
        return data


class DecisionForm(forms.ModelForm):
    # A plain choice, not the model field's: no blank "---------" radio, none chosen for
    # the member, and a verdict required.
    verdict = forms.ChoiceField(choices=Decision.Verdict.choices, widget=forms.RadioSelect)
    form_token = FormTokenField()

    class Meta:
        model = Decision
        fields = ["verdict", "reasoning"]
        widgets = {"reasoning": forms.Textarea(attrs={"rows": 4})}

    def save_once(self, run: Run, user) -> tuple[Decision, bool]:
        """Store the decision on ``run`` by ``user``, or return the same one already stored
        (:meth:`DecisionQuerySet.record`: a double post, a resent or re-filled form). True
        when it was stored now."""
        token = self.cleaned_data.get("form_token")
        return Decision.objects.record(
            run,
            user,
            self.cleaned_data["verdict"],
            self.cleaned_data["reasoning"],
            since=token.issued_at if token else None,
        )
