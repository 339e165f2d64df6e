"""Lean SQL for the background writers' hot batches (the ledger, speed samples).

Django's ``bulk_create`` and ``bulk_update`` prepare every field of every object through
the full ORM machinery, and ``bulk_update`` builds a CASE WHEN per field and row: at 32
streams that was 40% of the gateway's CPU (docs/benchmarks.md). These run the same
statements with each value prepared once by its own field's database conversion (only
for the fields that need one: dates, decimals, JSON, foreign keys), on Django's
connection, inside whatever transaction the caller holds.
"""

from __future__ import annotations

import orjson
from django.db import DEFAULT_DB_ALIAS, connection, connections, models


class Row:
    """A row for ``insert_rows``: a model's column values as plain attributes (``attname``:
    ``organisation_id``, not ``organisation``), read and set as on a model instance."""

    id: int | None = None


def new_row(model, **values) -> Row:
    """A ``Row`` of ``model`` with every concrete field's default (as the model's
    constructor fills them) and ``values``: a fifth of a ledger batch's CPU was building
    model instances (``Model.__init__``) only to read their attributes back."""
    row = Row()
    attrs = row.__dict__
    for attname, field in _defaults(model):
        attrs[attname] = field.get_default()
    attrs.update(values)
    return row


_defaults_plans: dict = {}


def _defaults(model) -> list:
    plan = _defaults_plans.get(model)
    if plan is None:
        fields = model._meta.concrete_fields
        plan = _defaults_plans[model] = [(f.attname, f) for f in fields if not f.primary_key]
    return plan


def insert_rows(model, objs: list, *, returning: bool = True) -> None:
    """``bulk_create`` for the writer's hot batches, at a fraction of its CPU: one
    ``INSERT ... SELECT * FROM <the rows>`` (``_source``), each value prepared once by
    its field's own database conversion (only for the fields that need one). ``objs`` are model
    instances or ``Row``s. Fills ``auto_now(_add)`` fields as ``save`` would, and sets
    ``obj.id`` unless ``returning`` is False (SQLite steps once per row returned, and
    each step releases the GIL: see ``_fetch_all``)."""
    plan = _insert_plan(model)
    stamped = _stamped_fields(model)
    for obj in objs:
        for f in stamped:
            f.pre_save(obj, True)
    per_statement = _rows_per_statement(len(plan[1]))
    db = connections[DEFAULT_DB_ALIAS]
    for start in range(0, len(objs), per_statement):
        _insert_chunk(model, objs[start : start + per_statement], plan, db, returning)


def update_rows(
    model, objs: list, names: tuple[str, ...], *, key: str = "id", only_if: dict | None = None
) -> None:
    """``bulk_update`` for the writer's hot batches: one ``UPDATE ... FROM (VALUES ...)``
    for all rows, instead of Django's CASE WHEN per field and row. Not one prepared
    UPDATE per row (``executemany``): SQLite releases the GIL around every statement,
    and while the event loop's thread keeps the CPU busy each release costs the writer
    a switch interval (5 ms) to get it back: 200 rows took 1.0 s instead of 10 ms
    (docs/benchmarks.md, round 14). Rows are matched on ``key`` (a unique field; each
    object has it as an attribute), and only where every column of ``only_if`` holds its
    value (``{"status": "pending"}``)."""
    if not objs:
        return
    _, preps, _ = _insert_plan(model)
    prep_of = dict(preps)
    fields = [model._meta.get_field(name) for name in names]
    plan = [(f.attname, prep_of[f.attname]) for f in fields]
    db = connections[DEFAULT_DB_ALIAS]
    key_field = model._meta.get_field(key)
    conditions = list((only_if or {}).items())
    per_statement = _rows_per_statement(len(fields) + 1, reserved=len(conditions))
    for start in range(0, len(objs), per_statement):
        chunk = objs[start : start + per_statement]
        value_rows = [[getattr(obj, key_field.attname), *_values(obj, plan, db)] for obj in chunk]
        source, params = _source([key_field, *fields], value_rows, others=len(conditions))
        sql = _update_sql(model, key_field, fields, source, [name for name, _ in conditions])
        with connection.cursor() as cursor:
            cursor.execute(sql, params + [value for _, value in conditions])


def _update_sql(model, key_field, fields: list, source: str, conditions: list[str]) -> str:
    quote = connection.ops.quote_name
    assignments = ", ".join(
        f"{quote(f.column)} = v.column{i}" for i, f in enumerate(fields, start=2)
    )
    table = quote(model._meta.db_table)
    where = [f"{table}.{quote(key_field.column)} = v.column1"]
    where += [f"{table}.{quote(model._meta.get_field(name).column)} = %s" for name in conditions]
    # Names come from the model (quoted), values are all parameters.
    return f"UPDATE {table} SET {assignments} FROM {source} WHERE {' AND '.join(where)}"  # noqa: S608


def _source(fields: list, value_rows: list[list], *, others: int = 0) -> tuple[str, list]:
    """A table ``v(column1, column2, ...)`` of ``value_rows`` (one value per field each)
    for a FROM clause, and its parameters: a VALUES list, or on PostgreSQL, once it
    has more values than psycopg caches the parsing of, one typed array per column
    ``UNNEST``-ed (as Django's own ``bulk_create`` does): parsing a statement of a
    placeholder per value again for each batch was ~40 % of the writer's CPU
    (docs/benchmarks.md, round 14). PostgreSQL types a VALUES list's columns from its
    literals (text, for a JSON or a date): each value is cast to its column's type.
    ``others``: the statement's parameters besides these (its conditions, a LIMIT),
    counted against that cache's limit with the padding rows."""
    pg = connection.vendor == "postgresql"
    padded = padded_count(len(value_rows))
    if pg and padded * len(fields) + others > PSYCOPG_CACHED_PARAMS:
        names = ", ".join(f"column{i}" for i in range(1, len(fields) + 1))
        arrays = ", ".join(f"(%s)::{_sql_type(f)}[]" for f in fields)
        return f"UNNEST({arrays}) AS v({names})", [list(c) for c in zip(*value_rows, strict=True)]
    marks = [f"CAST(%s AS {_sql_type(f)})" if pg else "%s" for f in fields]
    row = "(" + ", ".join(marks) + ")"
    params = [value for values in value_rows for value in values]
    padding = padded - len(value_rows)
    params += [None] * (padding * len(fields))
    return f"(VALUES {', '.join([row] * (len(value_rows) + padding))}) AS v", params


def padded_count(n: int) -> int:
    """``n`` rounded up to a power of two: the number of rows (or values) a statement
    of ``n`` is written for, the rest NULLs that match nothing (an UPDATE's key, an
    IN list) or are cut by ``LIMIT`` (an INSERT). A statement's text then takes one of
    a dozen forms instead of one per batch size, and the driver's cache of prepared
    statements stays small: the ``sqlite3`` module keeps the last 128 a connection
    prepared, and 128 of a hundred rows each held ~50 MB per writer thread, memory
    that ``tracemalloc`` does not see (docs/benchmarks.md, round 15)."""
    return 1 << max(0, n - 1).bit_length()


def _rows_per_statement(columns: int, reserved: int = 0) -> int:
    """The most rows of ``columns`` values one statement takes: a power of two, so a
    padded chunk stays within ``MAX_QUERY_PARAMS``."""
    most = max(1, (MAX_QUERY_PARAMS - reserved) // columns)
    return 1 << (most.bit_length() - 1)


PSYCOPG_CACHED_PARAMS = 50  # psycopg's MAX_CACHED_STATEMENT_PARAMS
_sql_types: dict = {}


def _sql_type(field) -> str:
    """``field``'s column type without its parameters, as Django's UNNEST does:
    ``varchar``, not ``varchar(64)`` (a cast would truncate; the column itself checks)."""
    found = _sql_types.get(field)
    if found is None:
        found = _sql_types[field] = field.db_type(connection).split("(")[0]
    return found


def select_rows(
    model, column: str, values: list, names: tuple[str, ...], *, for_update: bool = False
) -> list:
    """``model.objects.filter(<column>__in=values).only(*names)`` (``select_for_update``
    with ``for_update``), in the model's default ordering, without compiling a queryset:
    one prepared SELECT, each value converted by its field's own database converters
    (as the ORM does), instances built by ``from_db``. Fields not named are deferred
    (reading one queries it, as with ``only``)."""
    if not values:
        return []
    meta = model._meta
    wanted = {meta.get_field(name).attname for name in ("id", *names)}
    fields = [f for f in meta.concrete_fields if f.attname in wanted]  # from_db's order
    quote = connection.ops.quote_name
    order = [
        quote(meta.get_field(name.lstrip("-")).column) + (" DESC" if name.startswith("-") else "")
        for name in meta.ordering
    ]
    lock = " FOR UPDATE" if for_update and connection.features.has_select_for_update else ""
    columns = ", ".join(quote(f.column) for f in fields)
    where = quote(meta.get_field(column).column)
    tail = (f" ORDER BY {', '.join(order)}" if order else "") + lock
    rows = []
    with connection.cursor() as cursor:
        per_statement = _rows_per_statement(1)
        for start in range(0, len(values), per_statement):
            chunk = values[start : start + per_statement]
            if connection.vendor == "postgresql":  # one array: a short, cached statement
                matches, params = f"= ANY((%s)::{_sql_type(meta.get_field(column))}[])", [chunk]
            else:  # padded with NULLs, which match nothing (``padded_count``)
                params = chunk + [None] * (padded_count(len(chunk)) - len(chunk))
                matches = f"IN ({', '.join(['%s'] * len(params))})"
            # Names come from the model (quoted), values are all parameters.
            sql = f"SELECT {columns} FROM {quote(meta.db_table)} WHERE {where} {matches}{tail}"  # noqa: S608
            rows += _fetch_all(cursor, sql, params, fields)
    attnames = [f.attname for f in fields]
    converters = [
        (i, conv, col) for i, f in enumerate(fields) for conv, col in _converters(f, meta.db_table)
    ]
    if converters:
        db = connections[DEFAULT_DB_ALIAS]
        rows = [list(row) for row in rows]
        for row in rows:
            for i, conv, col in converters:
                row[i] = conv(row[i], col, db)
    return [model.from_db(connection.alias, attnames, row) for row in rows]


def _fetch_all(cursor, sql: str, params: list, fields: list) -> list:
    """The rows of ``sql``. On SQLite as one row: the ``sqlite3`` module releases the GIL
    around each row it steps to, and while the event loop's thread keeps the CPU busy
    each release costs the writer a switch interval (5 ms) to get it back, so 200 rows
    took 60-200 ms. ``json_group_array`` makes it one step; JSON keeps what the driver
    would have returned (integers, REALs to the 15 digits Django's decimal converter
    keeps, text, NULL; no field here is a BLOB)."""
    if connection.vendor != "sqlite" or any(f.get_internal_type() == "BinaryField" for f in fields):
        cursor.execute(sql, params)
        return cursor.fetchall()
    names = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    cursor.execute(f"SELECT json_group_array(json_array({names})) FROM ({sql})", params)  # noqa: S608
    return orjson.loads(cursor.fetchone()[0])


def _converters(field, table: str) -> list:
    """The converters the ORM applies to ``field``'s database values (backend's, then
    the field's own), each with the column expression it is called with."""
    col = field.get_col(table)
    found = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
    return [(conv, col) for conv in found]


MAX_QUERY_PARAMS = 30_000  # below SQLite's 32,766 and PostgreSQL's 65,535


def _values(obj, preps: list, db) -> list:
    """``obj``'s values for ``preps``, each prepared by its field's database conversion
    (``db`` is the connection itself: the ``connection`` proxy costs a context-local
    lookup per attribute read, a fifth of a batch's CPU when read per value)."""
    return [
        value if field is None or value is None else field.get_db_prep_save(value, db)
        for attname, field in preps
        for value in (getattr(obj, attname),)
    ]


def _insert_chunk(model, objs: list, plan: tuple, db, returning: bool) -> None:
    columns, preps, fields = plan
    table = connection.ops.quote_name(model._meta.db_table)
    source, values = _source(fields, [_values(obj, preps, db) for obj in objs], others=1)
    # Names come from the model (quoted), values are all parameters; LIMIT drops the
    # padding rows (``padded_count``), which come last.
    sql = f"INSERT INTO {table} ({columns}) SELECT * FROM {source} LIMIT %s"  # noqa: S608
    values.append(len(objs))
    with connection.cursor() as cursor:
        if not returning:
            cursor.execute(sql, values)
            return
        cursor.execute(sql + " RETURNING id", values)
        ids = [r[0] for r in cursor.fetchall()]
    for obj, pk in zip(objs, ids, strict=True):
        obj.id = pk
        if not isinstance(obj, Row):
            obj._state.adding = False


_insert_plans: dict = {}


def _insert_plan(model):
    plan = _insert_plans.get((model, connection.vendor))
    if plan is None:
        fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        preps = [(f.attname, None if _stored_as_is(f) else f) for f in fields]
        columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
        plan = _insert_plans[(model, connection.vendor)] = (columns, preps, fields)
    return plan


def _stamped_fields(model) -> list:
    return [
        f
        for f in model._meta.concrete_fields
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
    ]


_AS_IS = (models.CharField, models.TextField, models.IntegerField, models.BooleanField)


def _stored_as_is(field) -> bool:
    """Whether the database takes ``field``'s Python value unconverted: text, integers,
    booleans, and a foreign key to an integer key (an id). Dates, decimals and JSON go
    through the field's own ``get_db_prep_save`` (None is NULL for every field)."""
    if field.is_relation:
        return isinstance(field.target_field, (models.AutoField, models.BigAutoField))
    return isinstance(field, _AS_IS)
