"""Forms for the suite, run and decision pages."""

from __future__ import annotations

from decimal import Decimal

from django import forms

from evalsite.core.suites import Problem, Suite, SuiteError, parse_suite
from evalsite.core.yamlsafe import MAX_BYTES
from runs.models import Decision, SuiteVersion
from runs.validation import model_errors


class SuiteForm(forms.Form):
    """A suite pasted or uploaded in the browser: validated as an upload (no file access,
    no python checks); `problems` holds every problem found, by line."""

    CHECK = "check"
    REGISTER = "register"

    yaml_text = forms.CharField(
        label="Suite YAML",
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false", "autocomplete": "off"}),
    )
    file = forms.FileField(label="or upload a file", required=False)
    intent = forms.ChoiceField(
        choices=[(CHECK, CHECK), (REGISTER, REGISTER)], initial=REGISTER, required=False
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.suite: Suite | None = None
        self.problems: list[Problem] = []
        self.source_name = "pasted suite"
        self.text = ""

    @classmethod
    def too_big(cls) -> SuiteForm:
        """The form for a request whose body exceeded Django's limit (a huge paste)."""
        form = cls()
        form.problems = [
            Problem(form.source_name, None, "", f"the suite is larger than {MAX_BYTES:,} bytes")
        ]
        return form

    def clean_intent(self) -> str:
        return self.cleaned_data.get("intent") or self.REGISTER

    def clean(self):
        cleaned = super().clean()
        data = self._suite_bytes(cleaned)
        if data is None:
            return cleaned
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
            self.source_name = upload.name
            return upload.read()
        text = cleaned.get("yaml_text") or ""
        if not text.strip():
            if cleaned.get("intent") == self.REGISTER:
                self.add_error("yaml_text", "Paste a suite or choose a file.")
            return None
        return text.encode("utf-8", errors="surrogatepass")

    @property
    def wants_registration(self) -> bool:
        return self.cleaned_data.get("intent") == self.REGISTER and self.suite is not None

    def register(self, user) -> tuple[SuiteVersion, bool]:
        assert self.suite is not None
        return SuiteVersion.objects.register(
            self.suite, self.text, origin=SuiteVersion.Origin.UPLOAD, user=user
        )

    @property
    def warnings(self) -> list[Problem]:
        return list(self.suite.warnings) if self.suite else []


class RunForm(forms.Form):
    """A new run from the suite page. Contestants are picked from the active price table
    (and the suite's own contestants, variants included), each with a position: the lowest
    position is the baseline. Works as a plain form; htmx posts it for the live estimate."""

    MAX_REPLIES_BYTES = 2 * 1024 * 1024

    fake = forms.BooleanField(required=False, label="Fake answers (offline, simulated cost)")
    replies = forms.FileField(required=False, label="Replies file for scripted/… contestants")
    repeats = forms.IntegerField(required=False, min_value=1, max_value=20)
    max_cost = forms.DecimalField(
        required=False, min_value=Decimal("0.0001"), max_digits=10, decimal_places=4,
        label="Cap (USD)",
    )  # fmt: skip
    label = forms.SlugField(required=False, max_length=64)

    def __init__(self, *args, choices: list[str], defaults: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.choices = choices
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

    def clean(self):
        data = super().clean()
        picked = []
        for index, model in enumerate(self.choices):
            if data.get(f"pick_{index}"):
                order = data.get(f"order_{index}") or 99
                picked.append((order, index, model))
        data["contestants"] = [model for _, _, model in sorted(picked)]
        if len(data["contestants"]) < 2:
            raise forms.ValidationError("Pick two or more contestants; the first is the baseline.")
        replies = data.get("replies")
        if replies is not None and replies.size > self.MAX_REPLIES_BYTES:
            self.add_error("replies", "The replies file is over 2 MB.")
        return data


class DecisionForm(forms.ModelForm):
    class Meta:
        model = Decision
        fields = ["verdict", "reasoning"]
        widgets = {
            "verdict": forms.RadioSelect,
            "reasoning": forms.Textarea(attrs={"rows": 4}),
        }
