"""Spark reads Sluice change feeds: a Spark 4 Python data source.

::

    import sluice.spark

    sluice.spark.register(spark)
    df = (spark.read.format("sluice")
          .option("uri", "grpc://127.0.0.1:8815")
          .option("table", "demo.orders")
          .option("from_snapshot", "1234")          # exclusive; absent: the start
          .load())
    # order_id, customer, ..., _change_type, _commit_version, _commit_timestamp

    stream = (spark.readStream.format("sluice")
              .option("uri", "grpc://127.0.0.1:8815").option("table", "demo.orders")
              .option("starting", "earliest").option("maxSnapshotsPerTrigger", "10")
              .load())

A batch read plans the window once, on the driver (``GetFlightInfo`` with
``max_endpoints``), and each of its endpoints is one Spark partition, read
on an executor from its locations in turn (:func:`sluice.parallel.read_part`:
a replica that fails mid-read falls over to the next, which resumes after
the rows already read). The schema is ``GetSchema``'s. The streaming reader
is :class:`sluice.spark_stream.SluiceStreamReader`.

Options (strings; names are case-insensitive):

- ``uri`` (required), ``table`` (required; or ``.load("ns.table")``);
- the window: ``from_snapshot`` (exclusive) / ``to_snapshot`` (inclusive),
  or ``from_timestamp`` / ``to_timestamp`` (ISO 8601; without a zone, UTC)
  or ``from_timestamp_ms`` / ``to_timestamp_ms``; absent: the start of the
  history and the current snapshot, pinned when the read is planned;
- ``columns`` and ``identity`` (comma-separated), ``filter`` (Sluice's SQL
  filter), ``net_changes`` (true/false), ``compression`` (lz4, zstd);
- ``ref``: the branch or tag whose lineage the window (or stream, whose
  ``consumer`` then acknowledges on it) runs on; ``lineage`` (true/false):
  each row's id as the data column ``_row_id``;
- ``layout``: ``flat`` (the default: the data columns, then
  ``_change_type`` = insert, delete, update_preimage, update_postimage,
  ``_commit_version`` and ``_commit_timestamp``, the names of Spark's
  ``CHANGES`` and Delta's change data feed) or ``row`` (``op``, ``before``,
  ``after``, ``snapshot``, ``ts``);
- ``max_endpoints``: split the window into at most this many partitions
  (default 16; a server without replicas returns one);
- credentials: ``token`` or ``token_file``, or ``user`` and ``password``
  (basic auth); TLS: ``tls_ca``, ``tls_cert`` + ``tls_key`` (PEM files,
  read on the driver), ``tls_server_name``, ``insecure_skip_verify``;
  ``timeout`` (seconds, planning calls).

Filters: with ``spark.sql.python.filterPushdown.enabled`` set when
:func:`register` runs (Spark 4.1+), the comparisons Spark pushes on data
columns of the flat layout (``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN``,
``IS [NOT] NULL``, ``NOT``) are sent to the server as its filter, so
files, row groups and rows that cannot match are not read. Spark still
evaluates every filter itself: the server keeps an update pair whole when
either image matches, a superset of the rows Spark keeps. Column pruning
is the ``columns`` option (Spark's Python data sources are told no
projection).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math
import re
from dataclasses import replace
from typing import Any, Dict, Iterator, List, Optional, Sequence

import pyarrow as pa

try:
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceReader,
        EqualTo,
        Filter,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        InputPartition,
        IsNotNull,
        IsNull,
        LessThan,
        LessThanOrEqual,
        Not,
    )
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructType
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("sluice.spark needs pyspark 4.1 or newer: pip install 'sluice-client[spark]'") from exc

from .engine_options import ReadOptions, read_options
from .parallel import Part, plan, read_part

__all__ = ["register", "SluiceDataSource", "SluiceFilteringDataSource", "SluiceReader", "PartPartition",
           "FLAT_METADATA_COLUMNS", "STREAM_OPTIONS"]

#: The flat layout's change columns, after the data columns.
FLAT_METADATA_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")

#: The options only a streaming read takes (see sluice.spark_stream).
STREAM_OPTIONS = ("starting", "consumer", "maxSnapshotsPerTrigger", "maxRowsPerTrigger")

#: The Spark SQL setting that lets a Python data source take filters.
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Register the ``sluice`` format with a SparkSession.

    With ``spark.sql.python.filterPushdown.enabled`` true (Spark 4.1+),
    the reader registered takes Spark's filters (see the module's
    documentation); set it before calling. Spark refuses a data source that
    takes filters while the setting is off, so without it the reader
    registered takes none.
    """
    pushdown = str(spark.conf.get(PUSHDOWN_CONF, "false")).strip().lower() == "true"
    spark.dataSource.register(SluiceFilteringDataSource if pushdown else SluiceDataSource)


def data_columns(schema: pa.Schema, flat: bool) -> List[str]:
    """The table's data columns in a window's output schema."""
    if flat:
        return [f.name for f in schema if f.name not in FLAT_METADATA_COLUMNS]
    image = schema.field("after").type
    return [image.field(i).name for i in range(image.num_fields)]


def arrow_schema(opts: ReadOptions) -> pa.Schema:
    """The output schema of the options' request (GetSchema)."""
    req = {k: v for k, v in opts.request.items() if k != "compression"}
    with opts.connection.connect() as client:
        return client.schema(opts.table, **req)


class PartPartition(InputPartition):
    """One Spark partition: one endpoint of the planned window."""

    def __init__(self, part: Part) -> None:
        """Wrap a part."""
        super().__init__(part)
        self.part = part


def part_of(partition: InputPartition) -> Part:
    """The part a partition reads."""
    part = partition.part if isinstance(partition, PartPartition) else partition.value
    if not isinstance(part, Part):
        raise TypeError(f"not a partition of a sluice read: {partition!r}")
    return part


class SluiceDataSource(DataSource):
    """The ``sluice`` format: batch and streaming reads of a change feed."""

    def __init__(self, options: Dict[str, str]) -> None:
        """Read and check the options (an error names the bad one)."""
        super().__init__(options)
        self.read_options = read_options(options, extra=STREAM_OPTIONS)
        self._arrow: Optional[pa.Schema] = None

    @classmethod
    def name(cls) -> str:
        """The format's name: ``sluice``."""
        return "sluice"

    def _schema(self) -> pa.Schema:
        if self._arrow is None:
            self._arrow = arrow_schema(self.read_options)
        return self._arrow

    def schema(self) -> StructType:
        """The output schema, from GetSchema, as Spark types."""
        return from_arrow_schema(self._schema(), prefer_timestamp_ntz=True)

    def _checked(self, schema: StructType) -> pa.Schema:
        """The window's Arrow schema; a schema given with ``.schema(...)``
        must have its columns and types (nullability aside)."""
        arrow = self._schema()
        ours = from_arrow_schema(arrow, prefer_timestamp_ntz=True)
        if [(f.name, f.dataType) for f in schema.fields] != [(f.name, f.dataType) for f in ours.fields]:
            from .errors import InvalidArgument

            raise InvalidArgument(f"the schema given to the reader, {schema.simpleString()}, is not the "
                                  f"window's: {ours.simpleString()} (leave .schema() out)")
        return arrow

    def reader(self, schema: StructType) -> "SluiceReader":
        """A batch reader of the window."""
        if self.read_options.extra:
            raise_stream_only(self.read_options.extra)
        return SluiceReader(self.read_options, self._checked(schema))

    def streamReader(self, schema: StructType) -> Any:
        """A micro-batch reader of the table's new snapshots."""
        from .spark_stream import SluiceStreamReader

        return SluiceStreamReader(self.read_options, self._checked(schema))


class SluiceFilteringDataSource(SluiceDataSource):
    """The ``sluice`` format with filter pushdown (see :func:`register`)."""

    def reader(self, schema: StructType) -> "SluiceReader":
        """A batch reader that takes Spark's filters."""
        if self.read_options.extra:
            raise_stream_only(self.read_options.extra)
        return SluiceFilteringReader(self.read_options, self._checked(schema))


def raise_stream_only(extra: Dict[str, str]) -> None:
    """Refuse the streaming options in a batch read."""
    from .errors import InvalidArgument

    raise InvalidArgument(f"option {', '.join(sorted(extra))}: only for spark.readStream")


class SluiceReader(DataSourceReader):
    """Reads a planned window, one partition per endpoint."""

    def __init__(self, opts: ReadOptions, schema: pa.Schema) -> None:
        """Keep the options and the output schema (pickled to executors)."""
        self.opts = opts
        self.arrow = schema
        self.pushed: List[str] = []

    def request(self) -> Dict[str, Any]:
        """The request of the window: the options' own, the data columns
        of the schema (so a column a later commit adds does not change the
        schema under Spark) and the pushed filters."""
        req = dict(self.opts.request)
        req["columns"] = data_columns(self.arrow, self.opts.flat)
        filters = ([f"({req['filter']})"] if req.get("filter") else []) + [f"({p})" for p in self.pushed]
        if filters:
            req["filter"] = " AND ".join(filters)
        return req

    def partitions(self) -> Sequence[InputPartition]:
        """Plan the window (pinning it) and return one partition per
        endpoint."""
        p = plan(self.opts.connection, self.opts.table, max_endpoints=self.opts.max_endpoints, **self.request())
        if not p.schema.equals(self.arrow, check_metadata=False):
            from .errors import FailedPrecondition

            raise FailedPrecondition(f"the table's schema changed between GetSchema and planning: "
                                     f"{self.arrow} became {p.schema}; read again")
        return [PartPartition(part) for part in p.parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Stream one endpoint, falling over between its locations."""
        yield from read_part(self.opts.connection, part_of(partition), self.arrow)


class SluiceFilteringReader(SluiceReader):
    """A reader that sends Spark's filters on data columns to the server."""

    def pushFilters(self, filters: List[Filter]) -> Iterator[Filter]:
        """Keep the filters the server can evaluate, and return them all:
        Spark evaluates each again on the rows (see the module's
        documentation)."""
        if self.opts.flat:
            types = {f.name: f.type for f in self.arrow if f.name not in FLAT_METADATA_COLUMNS}
            for f in filters:
                text = filter_sql(f, types)
                if text is not None:
                    self.pushed.append(text)
        yield from filters


_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE"}


def _column(path: Sequence[str], types: Dict[str, pa.DataType]) -> Optional[str]:
    if len(path) != 1 or path[0] not in types:
        return None
    name = path[0]
    if _BARE.match(name) and name.upper() not in _KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def _literal(value: Any, t: pa.DataType) -> Optional[str]:
    """A Sluice filter literal for ``value`` compared with a column of
    type ``t``, or None when it does not fit the column exactly."""
    if pa.types.is_boolean(t):
        return ("TRUE" if value else "FALSE") if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if pa.types.is_integer(t):
        return str(value) if isinstance(value, int) else None
    if pa.types.is_floating(t):
        if isinstance(value, (int, float)) and math.isfinite(value):
            return repr(float(value))
        return None
    if pa.types.is_decimal(t):
        if isinstance(value, (int, decimal.Decimal)):
            d = decimal.Decimal(value)
            if d.is_finite() and -d.as_tuple().exponent <= t.scale:  # type: ignore[operator]
                return str(d)
        return None
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "'" + value.replace("'", "''") + "'" if isinstance(value, str) else None
    if pa.types.is_timestamp(t):
        if isinstance(value, _dt.datetime):
            if value.tzinfo is None:  # Spark gives a session-zone time as naive: not exact here
                return None
            return "TIMESTAMP '" + value.astimezone(_dt.timezone.utc).isoformat() + "'"
        return None
    if pa.types.is_date(t):
        if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
            return "DATE '" + value.isoformat() + "'"
        return None
    return None


def filter_sql(f: Filter, types: Dict[str, pa.DataType]) -> Optional[str]:
    """Sluice's filter text for one of Spark's filters, or None when it
    cannot be sent (another column kind, a literal that does not fit)."""
    if isinstance(f, Not):
        inner = filter_sql(f.child, types)
        return None if inner is None else f"NOT ({inner})"
    path: Sequence[str] = getattr(f, "attribute", ())
    col = _column(path, types)
    if col is None:
        return None
    t = types[path[0]]
    if isinstance(f, IsNull):
        return f"{col} IS NULL"
    if isinstance(f, IsNotNull):
        return f"{col} IS NOT NULL"
    if isinstance(f, In):
        lits = [_literal(v, t) for v in f.value if v is not None]
        if not lits or any(x is None for x in lits):
            return None
        return f"{col} IN ({', '.join(str(x) for x in lits)})"
    ops = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<="}
    op = ops.get(type(f))
    if op is None:
        return None
    lit = _literal(getattr(f, "value", None), t)
    return None if lit is None else f"{col} {op} {lit}"


def with_request(opts: ReadOptions, **changes: Any) -> ReadOptions:
    """The options with request fields changed (the streaming reader's
    windows)."""
    req = {k: v for k, v in {**opts.request, **changes}.items() if v is not None}
    return replace(opts, request=req)
