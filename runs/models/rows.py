"""Writing many rows, each with values of its own, faster than the ORM builds the statements."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, models
from django.db.models.constants import OnConflict


def update_each(
    model: type[models.Model],
    changes: dict[int, dict[str, Any]],
    guard: dict[str, Any] | None = None,
    *,
    using: str = DEFAULT_DB_ALIAS,
) -> set[int]:
    """One UPDATE per row of `model` by id, each with its own values and the same `guard`
    (field values the row must still have); the ids whose row matched.

    Prepared once per set of columns and sent through one cursor: the engine finishes
    hundreds of calls a second, and building each UPDATE with the ORM cost more CPU than
    the database spent running it (docs/performance.md). Values go through each field's
    own ``get_db_prep_save``, as the ORM's would.
    """
    guard = guard or {}
    connection = connections[using]
    quote = connection.ops.quote_name
    statements: dict[tuple[str, ...], str] = {}
    written = set()
    with connection.cursor() as cursor:
        for pk, values in changes.items():
            names = tuple(values)
            sql = statements.get(names)
            if sql is None:
                sets = ", ".join(f"{quote(_column(model, n))} = %s" for n in names)
                where = " AND ".join(f"{quote(_column(model, n))} = %s" for n in ("pk", *guard))
                table = quote(model._meta.db_table)
                # Column names from the model's own fields, quoted; values are parameters.
                sql = statements[names] = f"UPDATE {table} SET {sets} WHERE {where}"  # noqa: S608
            row = (*values.items(), ("pk", pk), *guard.items())
            cursor.execute(sql, [_field(model, n).get_db_prep_save(v, connection) for n, v in row])
            if cursor.rowcount == 1:
                written.add(pk)
    return written


def insert_each(
    model: type[models.Model],
    rows: Iterable[dict[str, Any]],
    *,
    ignore_conflicts: bool = False,
    using: str = DEFAULT_DB_ALIAS,
) -> int:
    """Insert a row of `model` for each mapping of its fields' attribute names (``run_id``
    for a foreign key) to values, every field not named taking its default (the primary key
    the database's, an ``auto_now`` field the time of this call); how many rows were sent.
    With `ignore_conflicts`, a row that breaks a unique constraint is skipped, as
    ``bulk_create(ignore_conflicts=True)`` skips it.

    One prepared INSERT of every column, sent with ``executemany``: storing a plan of
    thousands of rows, ``bulk_create`` spent most of its time assembling the SQL of its
    multi-row INSERTs, far more than the database spent running them (docs/performance.md).
    Values go through each field's own ``get_db_prep_save``, as the ORM's would; a field
    whose default is callable is refused rather than given one value for every row."""
    connection = connections[using]
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    for f in fields:
        if f.has_default() and callable(f.default):
            raise ValueError(f"{model.__name__}.{f.name}: insert_each gives no value made per row")
    template = model()  # each field's default, and auto_now's time, as a save would set it
    defaults = [f.get_db_prep_save(f.pre_save(template, add=True), connection) for f in fields]
    names = {f.attname for f in fields}
    conflict = OnConflict.IGNORE if ignore_conflicts else None
    quote, ops = connection.ops.quote_name, connection.ops
    columns = ", ".join(quote(f.column) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    suffix = ops.on_conflict_suffix_sql(fields, conflict, None, None)
    # Column names from the model's own fields, quoted; values are parameters.
    sql = (
        f"{ops.insert_statement(on_conflict=conflict)} {quote(model._meta.db_table)} "
        f"({columns}) VALUES ({marks}) {suffix}"
    ).rstrip()
    params = []
    for row in rows:
        if not row.keys() <= names:
            raise ValueError(f"{model.__name__} has no field {sorted(row.keys() - names)}")
        params.append(
            [
                f.get_db_prep_save(row[f.attname], connection) if f.attname in row else default
                for f, default in zip(fields, defaults, strict=True)
            ]
        )
    if params:
        with connection.cursor() as cursor:
            cursor.executemany(sql, params)
    return len(params)


def _field(model: type[models.Model], name: str) -> models.Field:
    """`model`'s field `name` ("pk": its primary key); ValueError for a relation's other
    side, which has no column to write."""
    field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise ValueError(f"{model.__name__}.{name} is the other side of a relation, not a column")
    return field


def _column(model: type[models.Model], name: str) -> str:
    column = _field(model, name).column
    if column is None:
        raise ValueError(f"{model.__name__}.{name} has no column of its own")
    return column
