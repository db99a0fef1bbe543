from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0013_no_look"),
    ]

    operations = [
        migrations.AlterField(
            model_name="judgement",
            name="kind",
            field=models.CharField(
                choices=[("pair", "Pair"), ("grade", "Grade"), ("recheck", "Recheck")],
                default="pair",
                max_length=8,
            ),
        ),
    ]
