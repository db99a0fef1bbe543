# The Label model moves from the labels app to this one (its table keeps its name), and
# judge-lab suites get their own origin so they stay out of the team's suite lists.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

LAB_CONTESTANTS = ["given/a", "given/b"]


def mark_lab_versions(apps, schema_editor):
    """Suite versions the judge lab registered (origin "upload", contestants given/a and
    given/b) become origin "lab"."""
    SuiteVersion = apps.get_model("runs", "SuiteVersion")
    for version in SuiteVersion.objects.filter(origin="upload").only("pk", "parsed"):
        if (version.parsed or {}).get("models") == LAB_CONTESTANTS:
            SuiteVersion.objects.filter(pk=version.pk).update(origin="lab")


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0008_pair_case_index"),
        ("labels", "0003_pairsets"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Label",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("labeller_name", models.CharField(help_text="Kept if the user is deleted.", max_length=150)),
                        ("task_id", models.CharField(max_length=64)),
                        ("case_id", models.CharField(max_length=64)),
                        ("baseline", models.CharField(max_length=300)),
                        ("candidate", models.CharField(max_length=300)),
                        ("baseline_sha", models.CharField(max_length=64)),
                        ("candidate_sha", models.CharField(max_length=64)),
                        ("prefer", models.CharField(choices=[("baseline", "Baseline"), ("candidate", "Candidate"), ("tie", "Tie")], max_length=10)),
                        ("note", models.TextField(blank=True)),
                        ("source", models.CharField(choices=[("browser", "Browser"), ("import", "Import")], default="browser", max_length=8)),
                        ("mode", models.CharField(choices=[("sample", "sample (counts toward the headline kappa)"), ("targeted", "targeted review (kept out of the headline kappa)")], default="sample", max_length=8)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        ("labeller", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ("suite", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="labels", to="runs.suite")),
                    ],
                    options={
                        "db_table": "labels_label",
                        "ordering": ["created_at", "pk"],
                        "indexes": [models.Index(fields=["suite", "task_id", "case_id"], name="label_lookup")],
                        "constraints": [models.UniqueConstraint(fields=("labeller_name", "suite", "task_id", "case_id", "baseline", "candidate", "baseline_sha", "candidate_sha"), name="one_label_per_labeller_and_pair")],
                    },
                ),
            ],
        ),
        migrations.AlterField(
            model_name="suiteversion",
            name="origin",
            field=models.CharField(choices=[("upload", "Uploaded in the browser"), ("path", "Loaded from a file"), ("mcp", "Registered over MCP"), ("demo", "Demo suite"), ("lab", "A judge-lab pair set")], max_length=10),
        ),
        migrations.RunPython(mark_lab_versions, migrations.RunPython.noop),
    ]
