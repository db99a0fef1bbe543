"""Forms for the suite pages."""

from __future__ import annotations

from django import forms

from evalsite.core.suites import Problem, Suite, SuiteError, parse_suite
from evalsite.core.yamlsafe import MAX_BYTES
from runs.models import SuiteVersion
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
