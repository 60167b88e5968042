"""Change rows as pandas and Polars DataFrames, exactly.

``pyarrow``'s default ``to_pandas()`` converts an int64 column that holds a
null to float64, and the int64 field of a struct column too when the field
holds nulls, as it often does under a null struct. In a change feed the
``before`` image of an insert and the ``after`` image of a delete are null,
so ids come out as floats, and an id above 2**53 comes out as a different
number. :func:`to_pandas` keeps every column in its Arrow type
(``pandas.ArrowDtype``): int64 stays int64 and a null stays ``<NA>``.
:func:`to_polars` returns a ``polars.DataFrame``, whose columns hold nulls
in any type.

DuckDB needs no helper: ``duckdb.sql("select ... from reader")`` reads a
``pyarrow.RecordBatchReader`` or ``pyarrow.Table`` held in a local variable
(``reader``) directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

import pyarrow as pa

from .errors import translated

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import polars

__all__ = ["IMAGES", "flatten_images", "to_pandas", "to_polars"]

#: The image columns of the default (row) layout, which ``flatten`` splits.
IMAGES = ("before", "after")

#: What :func:`to_pandas` and :func:`to_polars` take: a ``pyarrow.Table``,
#: ``RecordBatch`` or ``RecordBatchReader``, or a ``ChangeBatch`` or
#: ``FollowBatch`` (anything with a ``batch`` attribute holding a RecordBatch).
Changes = Union[pa.Table, pa.RecordBatch, pa.RecordBatchReader, Any]


def to_pandas(data: Changes, *, flatten: bool = False) -> "pandas.DataFrame":
    """Return change rows as a ``pandas.DataFrame`` whose values are exact.

    Every column keeps its Arrow type as a ``pandas.ArrowDtype``
    (``int64[pyarrow]``, ``struct<...>[pyarrow]``, ...): int64 values above
    2**53 keep every digit, and a null is ``<NA>`` rather than a NaN that
    turns the column into floats.

    Args:
        data: A ``pyarrow.Table`` (:meth:`Client.changes_table`), a
            ``pyarrow.RecordBatchReader`` (:meth:`Client.changes`; read to
            its end), a ``pyarrow.RecordBatch``, or a
            :class:`~sluice.ChangeBatch` / :class:`~sluice.FollowBatch`.
            The row layout (the default) and the flat layout
            (``layout="flat"``) both convert.
        flatten: Split the ``before`` and ``after`` structs of the row
            layout into one column per field, ``before.<column>`` and
            ``after.<column>`` (null where the image is null); other
            columns, and the flat layout's, are left as they are. Without
            it they are struct columns: ``df["after"].struct.field("id")``
            (pandas 2.2 and later) reads one field.

    Returns:
        A ``pandas.DataFrame`` with the columns ``op``, ``before``,
        ``after``, ``snapshot`` and ``ts`` (or the flattened images), or
        the flat layout's columns.

    Raises:
        ImportError: pandas is not installed, or is older than 1.5 (which
            has no ``ArrowDtype``).
        TypeError: ``data`` is none of the above.
        SluiceError: reading a reader failed.
    """
    try:
        import pandas as pd  # noqa: PLC0415 - pandas is optional
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("sluice.to_pandas needs pandas: pip install 'sluice-client[pandas]'") from exc
    if not hasattr(pd, "ArrowDtype"):  # pragma: no cover - depends on the environment
        raise ImportError(f"sluice.to_pandas needs pandas >= 1.5 (for pandas.ArrowDtype), not {pd.__version__}")
    table = _as_table(data, "to_pandas")
    if flatten:
        table = flatten_images(table)
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def to_polars(data: Changes, *, flatten: bool = False) -> "polars.DataFrame":
    """Return change rows as a ``polars.DataFrame``.

    Polars keeps nulls in any column type, so int64 ids stay exact without
    help; the images of the row layout are ``Struct`` columns
    (``df["after"].struct.field("id")``, or ``df.unnest("after")``).

    Args:
        data: As for :func:`to_pandas`: a ``pyarrow.Table``,
            ``RecordBatchReader`` (read to its end) or ``RecordBatch``, or a
            :class:`~sluice.ChangeBatch` / :class:`~sluice.FollowBatch`, in
            the row or the flat layout.
        flatten: Split the ``before`` and ``after`` structs into the columns
            ``before.<column>`` and ``after.<column>``, as :func:`to_pandas`
            does.

    Returns:
        A ``polars.DataFrame`` with the same columns as the Arrow data (or
        the flattened images).

    Raises:
        ImportError: polars is not installed
            (``pip install 'sluice-client[polars]'``).
        TypeError: ``data`` is none of the above.
        SluiceError: reading a reader failed.
    """
    try:
        import polars as pl  # noqa: PLC0415 - polars is optional
    except ImportError as exc:
        raise ImportError("sluice.to_polars needs polars: pip install 'sluice-client[polars]'") from exc
    table = _as_table(data, "to_polars")
    if flatten:
        table = flatten_images(table)
    df = pl.from_arrow(table, rechunk=False)
    if not isinstance(df, pl.DataFrame):  # pragma: no cover - from_arrow of a Table is a DataFrame
        raise TypeError(f"polars.from_arrow returned a {type(df).__name__}, not a DataFrame")
    return df


def flatten_images(table: pa.Table) -> pa.Table:
    """Split the struct columns ``before`` and ``after`` of the row layout
    into ``before.<field>`` / ``after.<field>`` columns, in place; every
    other column (all of the flat layout's) stays as it is."""
    names: list[str] = []
    arrays: list[pa.ChunkedArray[Any]] = []
    for i, f in enumerate(table.schema):
        col = table.column(i)
        if f.name in IMAGES and pa.types.is_struct(f.type):
            split = pa.Table.from_arrays([col], names=[f.name]).flatten()  # before.<field>, ...
            arrays.extend(split.columns)
            names.extend(split.column_names)
        else:
            arrays.append(col)
            names.append(f.name)
    return pa.Table.from_arrays(arrays, names=names)


def _as_table(data: Changes, what: str) -> pa.Table:
    batch = getattr(data, "batch", None)
    if isinstance(batch, pa.RecordBatch):
        data = batch  # a ChangeBatch or a FollowBatch
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        with translated():
            return data.read_all()
    raise TypeError(f"{what} takes a pyarrow Table, RecordBatch or RecordBatchReader, or a ChangeBatch or "
                    f"FollowBatch, not {type(data).__name__}")
