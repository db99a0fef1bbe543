# PairSet, PairSetItem and PairSetJudgeRun now live in the lab app (lab 0001 took them over
# with their tables): forget them here. Nothing is dropped.

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("labels", "0004_label_moved_to_runs"),
        ("lab", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="PairSetItem"),
                migrations.DeleteModel(name="PairSetJudgeRun"),
                migrations.DeleteModel(name="PairSet"),
            ],
        ),
    ]
