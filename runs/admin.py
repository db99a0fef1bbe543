"""The admin console: price tables and their rows, endpoints, suites (staff only); runs and
labels to look at, never to change (a run is the record of what was spent, a label the
record of what a person said)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from evalsite.core.pricing import PriceFileError, parse_price_yaml
from runs.models import Endpoint, Label, Price, PriceTable, Run, Suite, SuiteVersion

PRICE_FIELDS = (
    "model",
    "input_per_mtok",
    "output_per_mtok",
    "cached_input_per_mtok",
    "source_url",
    "read_on",
    "legacy",
)


class PriceForm(forms.ModelForm):
    """Refuses changes to a frozen table's rows with a message instead of an error page."""

    class Meta:
        model = Price
        fields = ["table", *PRICE_FIELDS]

    def clean(self):
        super().clean()
        cleaned = self.cleaned_data  # what ModelForm.clean returns
        table = cleaned.get("table") or getattr(self.instance, "table", None)
        if table is not None and table.is_frozen and self.has_changed():
            raise ValidationError(
                f"{table.name} was used by a run and is frozen: duplicate it as a new dated "
                "table to change prices."
            )
        return cleaned


class ProviderFilter(admin.SimpleListFilter):
    title = "provider"
    parameter_name = "provider"

    def lookups(self, request, model_admin):
        providers = {m.split("/", 1)[0] for m in Price.objects.values_list("model", flat=True)}
        return [(p, p) for p in sorted(providers)]

    def queryset(self, request, queryset):
        if self.value():
            return queryset.filter(model__startswith=f"{self.value()}/")
        return queryset


@admin.register(Price)
class PriceAdmin(admin.ModelAdmin):
    form = PriceForm
    list_display = [
        "model",
        "table",
        "input_per_mtok",
        "output_per_mtok",
        "cached_input_per_mtok",
        "read_on",
        "legacy",
    ]
    list_editable = ["input_per_mtok", "output_per_mtok", "cached_input_per_mtok", "read_on"]
    list_filter = [ProviderFilter, "table"]
    search_fields = ["model"]
    list_select_related = ["table"]

    def get_changelist_form(self, request, **kwargs):
        kwargs.setdefault("form", PriceForm)
        return super().get_changelist_form(request, **kwargs)

    def has_change_permission(self, request, obj=None):
        """A frozen table's row opens to be read: no Save buttons for a change refused."""
        if obj is not None and obj.table.is_frozen:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.table.is_frozen:
            return False
        return super().has_delete_permission(request, obj)


class PriceInline(admin.TabularInline):
    model = Price
    form = PriceForm
    extra = 0
    fields = PRICE_FIELDS

    def _editable(self, obj) -> bool:
        return obj is None or not obj.is_frozen

    def has_add_permission(self, request, obj=None):
        return self._editable(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return self._editable(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._editable(obj) and super().has_delete_permission(request, obj)


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A price table in evalmine's YAML format.")
    name = forms.CharField(required=False, help_text="Default: prices-<pinned date>.")
    activate = forms.BooleanField(required=False, help_text="Make it the active table.")

    def clean_name(self):
        name = self.cleaned_data["name"].strip()
        if name and PriceTable.objects.filter(name=name).exists():
            raise ValidationError(f"A price table named {name} already exists.")
        return name


@admin.register(PriceTable)
class PriceTableAdmin(admin.ModelAdmin):
    list_display = ["name", "pinned", "currency", "verified", "active", "frozen", "row_count"]
    list_filter = ["active", "verified"]
    search_fields = ["name", "notes"]
    inlines = [PriceInline]
    actions = ["mark_active", "duplicate_as_new_table", "export_yaml"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(_rows=Count("prices", distinct=True), _runs=Count("runs", distinct=True))
        )

    @admin.display(boolean=True, description="frozen")
    def frozen(self, obj) -> bool:
        return obj._runs > 0

    @admin.display(description="models", ordering="_rows")
    def row_count(self, obj) -> int:
        return obj._rows

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.is_frozen:
            return [f.name for f in PriceTable._meta.concrete_fields if f.name != "id"]
        return ["active"]

    def has_change_permission(self, request, obj=None):
        """A frozen table opens to be read: its fields and rows cannot change, so no Save."""
        if obj is not None and obj.is_frozen:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_frozen:
            return False
        return super().has_delete_permission(request, obj)

    @admin.action(description="Mark the selected table active")
    def mark_active(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one table to mark active.", messages.ERROR)
            return
        table = queryset.get()
        table.mark_active()
        self.message_user(request, f"{table.name} is now the active price table.")

    @admin.action(description="Duplicate as a new dated table (editable, unverified)")
    def duplicate_as_new_table(self, request, queryset):
        for table in queryset:
            copy = table.duplicate()
            self.message_user(request, f"Created {copy.name} from {table.name}.")

    @admin.action(description="Export as price YAML")
    def export_yaml(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one table to export.", messages.ERROR)
            return None
        table = queryset.get()
        response = HttpResponse(table.export_yaml(), content_type="application/yaml")
        response["Content-Disposition"] = f'attachment; filename="{table.name}.yaml"'
        return response

    def get_urls(self):
        extra = [
            path(
                "import/",
                self.admin_site.admin_view(self.import_view),
                name="runs_pricetable_import",
            )
        ]
        return extra + super().get_urls()

    def import_view(self, request: HttpRequest):
        if not self.has_add_permission(request):
            return redirect("admin:index")
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            try:
                text = form.cleaned_data["file"].read().decode("utf-8")
                sheet = parse_price_yaml(text)
                table = PriceTable.objects.import_sheet(
                    sheet,
                    name=form.cleaned_data["name"] or None,
                    activate=form.cleaned_data["activate"],
                )
            except UnicodeDecodeError:
                form.add_error("file", "The file is not UTF-8 text.")
            except PriceFileError as exc:
                form.add_error("file", str(exc))
            else:
                self.message_user(
                    request, f"Imported {table.name} ({table.prices.count()} models)."
                )
                for line in sheet.unused:
                    self.message_user(request, line, level=messages.WARNING)
                return redirect(reverse("admin:runs_pricetable_change", args=[table.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": "Import a price table",
        }
        return TemplateResponse(request, "admin/runs/pricetable/import.html", context)


class EndpointForm(forms.ModelForm):
    # The rules themselves are in Endpoint.clean() (evalsite/core/providers/endpoints.py).
    class Meta:
        model = Endpoint
        fields = ["name", "base_url", "key_env_var", "notes"]
        help_texts = {
            "base_url": (
                "http:// or https://. A server on this machine or the private network is "
                "fine (vLLM, Ollama); link-local addresses (169.254.0.0/16, fe80::/10) and "
                "cloud metadata services are refused."
            ),
            "key_env_var": (
                "The NAME of the variable holding the key, never the key: "
                "EVALSITE_ENDPOINT_<NAME>_KEY, e.g. EVALSITE_ENDPOINT_VLLM_KEY. "
                "Blank for a server without a key."
            ),
        }


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = EndpointForm
    list_display = ["name", "base_url", "key_env_var"]
    search_fields = ["name", "base_url"]


class SuiteVersionInline(admin.TabularInline):
    model = SuiteVersion
    fields = readonly_fields = ("sha256", "origin", "source_path", "created_by", "created_at")
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Suite)
class SuiteAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [SuiteVersionInline]


class ViewOnlyAdmin(admin.ModelAdmin):
    """Staff may list, search and open the records; no one adds, changes or deletes them
    here (the change page shows the fields without a save button, and a POST is refused)."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Run)
class RunAdmin(ViewOnlyAdmin):
    list_display = ["id", "suite_name", "status", "label", "contestant_list", "spent", "created_at"]
    list_filter = ["status", "created_at"]
    search_fields = ["id", "label", "suite_version__suite__name"]
    list_select_related = ["suite_version__suite"]
    date_hierarchy = "created_at"

    def get_queryset(self, request):
        return super().get_queryset(request).defer("report")

    @admin.display(description="suite", ordering="suite_version__suite__name")
    def suite_name(self, run: Run) -> str:
        return run.suite_version.suite.name

    @admin.display(description="contestants")
    def contestant_list(self, run: Run) -> str:
        return ", ".join(run.contestants)

    @admin.display(description="spent (USD)")
    def spent(self, run: Run) -> str:
        return f"{run.spent_usd:.4f}"


@admin.register(Label)
class LabelAdmin(ViewOnlyAdmin):
    list_display = ["labeller_name", "suite", "task_id", "case_id", "prefer", "mode", "source",
                    "created_at"]  # fmt: skip
    list_filter = ["prefer", "mode", "source", "suite"]
    search_fields = ["labeller_name", "task_id", "case_id", "note"]
    list_select_related = ["suite"]
