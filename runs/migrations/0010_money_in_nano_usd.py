"""Money that is summed or updated with F() is stored as whole nano-USD (1e-9 USD).

A DecimalField is a REAL on SQLite, where F() arithmetic and Sum() ran in binary floating
point. Each column is copied into a new integer column (rounded to the 8 decimal places it
was declared with, then to the nano), the old column is dropped and the new one takes its
name. The copy is one UPDATE per column, the same SQL on SQLite and PostgreSQL; reversing
it divides again.
"""

from decimal import Decimal

from django.db import migrations

import runs.models.run

MONEY = {
    "run": ("reserved_usd", "spent_answers_usd", "spent_judge_usd", "uncached_usd"),
    "answer": ("reserved_usd", "cost_usd", "cost_if_uncached_usd"),
    "judgement": ("reserved_usd", "cost_usd", "cost_if_uncached_usd"),
}
NULLABLE = {"cost_usd", "cost_if_uncached_usd"}
TEMPORARY = "{}_nano"


def _copy(apps, schema_editor, sql: str) -> None:
    # PostgreSQL queues the deferred foreign-key checks of updated rows, and a table with
    # pending trigger events cannot be altered in the same transaction: check them now.
    postgres = schema_editor.connection.vendor == "postgresql"
    if postgres:
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    quote = schema_editor.quote_name
    for model_name, fields in MONEY.items():
        table = quote(apps.get_model("runs", model_name)._meta.db_table)
        for name in fields:
            schema_editor.execute(
                sql.format(table=table, usd=quote(name), nano=quote(TEMPORARY.format(name)))
            )
    if postgres:
        schema_editor.execute("SET CONSTRAINTS ALL DEFERRED")


def to_nano(apps, schema_editor) -> None:
    _copy(
        apps,
        schema_editor,
        "UPDATE {table} SET {nano} = CAST(ROUND(ROUND({usd}, 8) * 1000000000) AS BIGINT)",
    )


def from_nano(apps, schema_editor) -> None:
    _copy(apps, schema_editor, "UPDATE {table} SET {usd} = {nano} / 1000000000.0")


def _final(name: str, model_name: str) -> runs.models.run.MoneyField:
    if name in NULLABLE:
        return runs.models.run.MoneyField(blank=True, null=True)
    if model_name == "run":
        return runs.models.run.MoneyField(default=Decimal("0"))
    return runs.models.run.MoneyField(
        default=Decimal("0"), help_text="Held against the cap for its call."
    )


def _operations() -> list:
    pairs = [(model, name) for model, names in MONEY.items() for name in names]
    add = [
        migrations.AddField(model, TEMPORARY.format(name), runs.models.run.MoneyField(null=True))
        for model, name in pairs
    ]
    swap = []
    for model, name in pairs:
        swap += [
            migrations.RemoveField(model, name),
            migrations.RenameField(model, TEMPORARY.format(name), name),
            migrations.AlterField(model, name, _final(name, model)),
        ]
    return [*add, migrations.RunPython(to_nano, from_nano), *swap]


class Migration(migrations.Migration):
    dependencies = [("runs", "0009_label_and_lab_suites")]

    operations = _operations()
