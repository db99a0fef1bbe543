# The judge lab's models move here from the labels app with their tables (labels_pairset,
# labels_pairsetitem, labels_pairsetjudgerun), which keep their names and their rows: only
# Django's idea of which app owns them changes. labels 0005 forgets them there.

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("labels", "0004_label_moved_to_runs"),
        ("runs", "0009_label_and_lab_suites"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="PairSet",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(max_length=60, unique=True, validators=[django.core.validators.RegexValidator("^[a-z0-9][a-z0-9-]{0,63}$", "Use lowercase letters, digits and hyphens (max 64).")])),
                        ("source_name", models.CharField(blank=True, help_text="The file imported.", max_length=255)),
                        ("sha256", models.CharField(help_text="Of the file's bytes.", max_length=64)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("created_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "db_table": "labels_pairset",
                        "ordering": ["-created_at", "-pk"],
                    },
                ),
                migrations.CreateModel(
                    name="PairSetJudgeRun",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(max_length=400)),
                        ("judge", models.CharField(max_length=300)),
                        ("rubric", models.TextField(blank=True)),
                        ("fake", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("pairset", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="judge_runs", to="lab.pairset")),
                        ("run", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name="lab", to="runs.run")),
                    ],
                    options={
                        "db_table": "labels_pairsetjudgerun",
                        "ordering": ["-created_at", "-pk"],
                    },
                ),
                migrations.CreateModel(
                    name="PairSetItem",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("line", models.PositiveIntegerField()),
                        ("pair_id", models.CharField(max_length=200)),
                        ("task", models.CharField(blank=True, help_text="As given; blank for none.", max_length=200)),
                        ("task_id", models.CharField(max_length=64)),
                        ("case_id", models.CharField(max_length=64)),
                        ("question", models.TextField()),
                        ("answer_a", models.TextField(blank=True)),
                        ("answer_b", models.TextField(blank=True)),
                        ("model_a", models.CharField(blank=True, max_length=300)),
                        ("model_b", models.CharField(blank=True, max_length=300)),
                        ("votes", models.JSONField(default=list)),
                        ("verdicts", models.JSONField(default=list)),
                        ("pairset", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="items", to="lab.pairset")),
                    ],
                    options={
                        "db_table": "labels_pairsetitem",
                        "ordering": ["line"],
                        "constraints": [models.UniqueConstraint(fields=("pairset", "pair_id"), name="one_pair_id_per_set"), models.UniqueConstraint(fields=("pairset", "case_id"), name="one_case_id_per_set")],
                    },
                ),
            ],
        ),
    ]
