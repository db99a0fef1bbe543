# Label now lives in the runs app (runs 0009 took it over with its table): forget it here.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("labels", "0003_pairsets"),
        ("runs", "0009_label_and_lab_suites"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="Label")]),
    ]
