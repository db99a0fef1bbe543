"""An answer's stored ``passed`` is the attempt's pass by the one rule, its grade included
(issue 28 item 6). Rows written before it kept ``passed: true`` beside a failed or unusable
grade: each graded answer (one with a grade call) whose grade did not pass is not passed."""

from django.db import migrations


def graded_pass(apps, schema_editor):
    Answer = apps.get_model("runs", "Answer")
    Judgement = apps.get_model("runs", "Judgement")
    graded = Judgement.objects.filter(kind="grade").values("answer_id")
    Answer.objects.filter(passed=True, pk__in=graded).exclude(grade_passed=True).update(
        passed=False
    )


class Migration(migrations.Migration):
    dependencies = [("runs", "0014_judgement_recheck")]

    operations = [migrations.RunPython(graded_pass, migrations.RunPython.noop)]
