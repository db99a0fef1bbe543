# A run executed where it was planned stores its first answers with it and the rest beside
# its first calls (runs.planning.planner.start_plan): plan_stored_at is empty until its
# last answer row is stored. Every run before this stored its plan whole with itself.

import django.utils.timezone
from django.db import migrations, models
from django.db.models import F


def stored_with_the_run(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    Run.objects.update(plan_stored_at=F("created_at"))


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0018_pair_labelled"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="plan_stored_at",
            field=models.DateTimeField(
                blank=True,
                default=django.utils.timezone.now,
                help_text="When its last answer row was stored. Empty while the process that "
                "planned it is still storing them (beside its first calls): it is never judged "
                "or reported before, and is closed if that process stops first.",
                null=True,
            ),
        ),
        migrations.RunPython(stored_with_the_run, migrations.RunPython.noop),
    ]
