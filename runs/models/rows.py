"""Writing many rows, each with values of its own, faster than the ORM builds the statements."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, models, transaction
from django.db.models.constants import OnConflict


def update_each(
    model: type[models.Model],
    changes: dict[int, dict[str, Any]],
    guard: dict[str, Any] | None = None,
    *,
    each_guard: Mapping[int, Mapping[str, Any]] | None = None,
    using: str = DEFAULT_DB_ALIAS,
) -> set[int]:
    """An UPDATE of each row of `model` by id, each with its own values, of the rows that
    still have the `guard`'s field values, and each its own in `each_guard` (by id: a
    claim's attempt); the ids written (without a guard, every id given).

    The rows the guard holds for are read first, locked (``select_for_update``; SQLite's
    IMMEDIATE transaction holds the whole database), in the same transaction as the
    writes, so no row changes between the read and its write. Each set of columns is then
    one prepared UPDATE sent with ``executemany``: the engine finishes hundreds of calls a
    second, and building each UPDATE with the ORM, or sending each through Django's cursor
    one by one, cost more CPU than the database spent running them (docs/performance.md).
    Values go through each field's own ``get_db_prep_save``, as the ORM's would (a scalar
    value once per column: :class:`Prepared`).
    """
    guard = guard or {}
    connection = connections[using]
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    groups: dict[tuple[str, ...], list[list[Any]]] = {}
    fields: dict[tuple[str, ...], Prepared] = {}
    with transaction.atomic(using=using):
        written = set(changes)
        if (guard or each_guard) and changes:
            rows = model._default_manager.using(using).filter(pk__in=list(changes), **guard)
            own = each_guard or {}
            asked = list(next(iter(own.values()), {}))
            read = rows.select_for_update().order_by("pk").values_list("pk", *asked)
            # Each row's own values are compared here, under the lock; the UPDATE below
            # asks for the shared ones again (its WHERE), as before.
            written = {pk for pk, *values in read if values == [own[pk][name] for name in asked]}
        for pk, values in changes.items():
            if pk in written:
                names = tuple(values)
                if names not in fields:
                    columns = [_field(model, n) for n in (*names, "pk", *guard)]
                    fields[names] = Prepared(columns, connection)
                row = (*values.values(), pk, *guard.values())
                groups.setdefault(names, []).append(fields[names].row(row))
        with connection.cursor() as cursor:
            for names, params in groups.items():
                sets = ", ".join(f"{quote(column_name(model, n))} = %s" for n in names)
                where = " AND ".join(f"{quote(column_name(model, n))} = %s" for n in ("pk", *guard))
                # Column names from the model's own fields, quoted; values are parameters.
                cursor.executemany(f"UPDATE {table} SET {sets} WHERE {where}", params)  # noqa: S608
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
    Values go through each field's own ``get_db_prep_save``, as the ORM's would (a scalar
    value once per column: :class:`Prepared`); a field whose default is callable is refused
    rather than given one value for every row."""
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
    columns = ", ".join(quote(column_name(model, f.name)) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    suffix = ops.on_conflict_suffix_sql(fields, conflict, None, None)
    # Column names from the model's own fields, quoted; values are parameters.
    sql = (
        f"{ops.insert_statement(on_conflict=conflict)} {quote(model._meta.db_table)} "
        f"({columns}) VALUES ({marks}) {suffix}"
    ).rstrip()
    prepared = Prepared(fields, connection)
    index = {f.attname: i for i, f in enumerate(fields)}
    params = []
    for row in rows:
        if not row.keys() <= names:
            raise ValueError(f"{model.__name__} has no field {sorted(row.keys() - names)}")
        values = list(defaults)  # a field the row does not name: its default
        for name, value in row.items():
            values[index[name]] = prepared.value(index[name], value)
        params.append(values)
    if params:
        with connection.cursor() as cursor:
            cursor.executemany(sql, params)
    return len(params)


# Values whose prepared form depends on the value alone (these, and a choice's member):
# prepared once per column. Not floats or Decimals, whose equal values may differ (-0.0
# and 0.0, 1.0 and 1.00).
_SCALARS = frozenset({type(None), bool, int, str, dt.datetime, dt.date})


class Prepared:
    """Each column's ``get_db_prep_save`` of the values of many rows: a scalar value (text,
    an integer, a flag, a time, None) is worked out once per column, for every row with it.

    The rows of one statement often share values: every answer scored in a batch has the
    same ``scored_at``, most have no match and an empty schema error. Preparing each again
    was most of the CPU of writing 100,000 rows (docs/performance.md); a value of any other
    type (a JSON mapping or list) is prepared for each row."""

    def __init__(self, fields: Sequence[models.Field], connection: Any) -> None:
        self.fields = list(fields)
        self.connection = connection
        self.seen: list[dict[tuple[type, Any], Any]] = [{} for _ in self.fields]

    def row(self, values: Sequence[Any]) -> list[Any]:
        """A value for each column, as the database takes them."""
        return [self.value(index, value) for index, value in enumerate(values)]

    def value(self, index: int, value: Any) -> Any:
        """`value` of the column at `index`, as the database takes it."""
        if type(value) in _SCALARS or isinstance(value, Enum):
            seen, key = self.seen[index], (type(value), value)
            if key not in seen:
                seen[key] = self.fields[index].get_db_prep_save(value, self.connection)
            return seen[key]
        return self.fields[index].get_db_prep_save(value, self.connection)


def _field(model: type[models.Model], name: str) -> models.Field:
    """`model`'s field `name` ("pk": its primary key); ValueError for a relation's other
    side, which has no column to write."""
    field = model._meta.pk if name == "pk" else model._meta.get_field(name)
    if not isinstance(field, models.Field):
        raise ValueError(f"{model.__name__}.{name} is the other side of a relation, not a column")
    return field


def column_name(model: type[models.Model], name: str) -> str:
    column = _field(model, name).column
    if column is None:
        raise ValueError(f"{model.__name__}.{name} has no column of its own")
    return column
