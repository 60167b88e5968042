"""Change rows as pandas DataFrames, exactly.

``pyarrow``'s default ``to_pandas()`` converts an int64 column that holds a
null to float64, and the int64 field of a struct column too when the field
holds nulls, as it often does under a null struct. In a change feed the
``before`` image of an insert and the ``after`` image of a delete are null,
so ids come out as floats, and an id above 2**53 comes out as a different
number. :func:`to_pandas` keeps every column in its Arrow type
(``pandas.ArrowDtype``): int64 stays int64 and a null stays ``<NA>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .errors import translated

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["to_pandas"]


def to_pandas(data: Any, *, flatten: bool = False) -> "pandas.DataFrame":
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
        flatten: Split the ``before`` and ``after`` structs into one column
            per field, ``before.<column>`` and ``after.<column>`` (null
            where the image is null). Without it they are struct columns:
            ``df["after"].struct.field("id")`` (pandas 2.2 and later) reads
            one field.

    Returns:
        A ``pandas.DataFrame`` with the columns ``op``, ``before``,
        ``after``, ``snapshot`` and ``ts`` (or the flattened images).

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
    table = _as_table(data)
    if flatten:
        table = table.flatten()
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def _as_table(data: Any) -> pa.Table:
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
    raise TypeError("to_pandas takes a pyarrow Table, RecordBatch or RecordBatchReader, or a ChangeBatch or "
                    f"FollowBatch, not {type(data).__name__}")
