from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0012_answer_match"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="no_look",
            field=models.BooleanField(
                default=False,
                help_text="No case data is written (docs/no-look.md): run only by the process "
                "that started it.",
            ),
        ),
        migrations.AddField(
            model_name="suiteversion",
            name="stripped",
            field=models.BooleanField(
                default=False, help_text="A no-look suite: its cases keep their ids and tags only."
            ),
        ),
    ]
