"""Encoding of a ChangeRequest (proto ``sluice.v1.ChangeRequest``) as JSON.

The server accepts the protojson form of the request, so the client writes
it by hand: proto field names, unset fields omitted, int64 values as JSON
strings (protojson reads both strings and numbers; strings survive any JSON
tool that turns numbers into doubles).
"""

from __future__ import annotations

import json
import operator
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, TypedDict

from .errors import InvalidArgument

if TYPE_CHECKING:  # pragma: no cover
    from typing_extensions import Unpack

__all__ = ["CHANGE_OPTIONS", "COMPRESSIONS", "LAYOUTS", "ON_GAPS", "STREAM_OPTIONS", "ChangeOptions",
           "StreamOptions", "change_request", "encode", "encode_options"]

#: The IPC body compressions the server offers ("" and None: none).
COMPRESSIONS = ("", "lz4", "zstd")

#: The layouts of the change rows ("" and None: the row, op/before/after/snapshot/ts).
LAYOUTS = ("", "flat")

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _int64(name: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise InvalidArgument(f"{name} {n} does not fit in a signed 64-bit integer")
    return str(n)


def _names(name: str, value: Optional[Iterable[str]]) -> Optional[List[str]]:
    if value is None:
        return None
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a list of column names, not a single {type(value).__name__} "
                        f"(write [{value!r}])")
    try:
        names = list(value)
    except TypeError:
        raise TypeError(f"{name} must be a list of column names, not {type(value).__name__}") from None
    seen = set()
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{name} must hold str column names, not {type(n).__name__}")
        if not n.strip():
            raise InvalidArgument(f"empty name in {name}")
        if n in seen:
            raise InvalidArgument(f"column {n!r} appears twice in {name}")
        seen.add(n)
    return names or None


def _ref(name: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str (a branch or tag name), not {type(value).__name__}")
    if value != value.strip() or not value:
        raise InvalidArgument(f"{name} {value!r}: a branch or tag name, without surrounding spaces")
    return value


def _snapshot_or_tag(name: str, value: Any) -> "tuple[Optional[str], Optional[str]]":
    """A window end given as a snapshot id (int) or a tag name (str): its
    int64 string and its ref, one of them None."""
    if isinstance(value, str):
        try:
            int(value)
        except ValueError:
            return None, _ref(name, value)
        raise TypeError(f"{name} {value!r}: give a snapshot id as an int (a str names a tag)")
    return _int64(name, value), None


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def _flag(name: str, value: Any) -> Optional[bool]:
    """A bool field: True, or None (left out) for False."""
    return True if _bool(name, value) else None


#: The ``on_gap`` values of a stream (None and "": end the stream).
ON_GAPS = ("", "resync")


def _on_gap(name: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if value not in ON_GAPS:
        raise InvalidArgument(f"{name} {value!r}: want None or 'resync'")
    return value or None


class ChangeOptions(TypedDict, total=False):
    """The keyword-only request fields that every call building a change
    request takes (:meth:`sluice.Client.changes`, ``batches``,
    ``changes_table``, ``flight_info``, ``explain``, ``schema``,
    ``subscribe``, :func:`sluice.parallel.plan`) and passes on unchanged. A
    new field is one line here and one in ``_ENCODERS``.

    Attributes:
        ref: The branch or tag whose lineage the window or stream runs on;
            None: the main branch. An unknown ref raises
            :class:`sluice.NotFound`.
        lineage: Add each row's id to the images as their last field,
            ``_row_id`` (int64, null for a row without one), on a table that
            keeps row lineage (Iceberg format v3, Delta row tracking).
    """

    ref: Optional[str]
    lineage: bool


class StreamOptions(ChangeOptions, total=False):
    """:class:`ChangeOptions` and the keyword-only fields only a stream
    takes (:meth:`sluice.Client.subscribe`).

    Attributes:
        on_gap: What the stream does when the snapshot it would go on from
            has expired: after its ``resync`` batch, ``"resync"`` streams the
            full state at the current snapshot and goes on; None ends the
            stream with :class:`sluice.FailedPrecondition`.
    """

    on_gap: Optional[str]


#: Each option's encoder: its JSON value, or None to leave it out.
_ENCODERS: Dict[str, Callable[[str, Any], Any]] = {
    "ref": _ref,
    "lineage": _flag,
    "on_gap": _on_gap,
}


#: The names of the :class:`ChangeOptions` and of the :class:`StreamOptions`.
CHANGE_OPTIONS = frozenset(ChangeOptions.__annotations__)
STREAM_OPTIONS = frozenset(StreamOptions.__annotations__)


def encode_options(options: Mapping[str, Any], allowed: Iterable[str] = CHANGE_OPTIONS) -> Dict[str, Any]:
    """Validate keyword options (:class:`ChangeOptions` or
    :class:`StreamOptions`, as ``allowed`` names) and return the request
    fields they set.

    Raises:
        TypeError: An option not in ``allowed``, or a value of the wrong
            type.
        InvalidArgument: A value the server would refuse.
    """
    names = set(allowed)
    out: Dict[str, Any] = {}
    for name, value in options.items():
        if name not in names:
            raise TypeError(f"unexpected keyword argument {name!r} (the request options are "
                            f"{', '.join(sorted(names))})")
        encoded = _ENCODERS[name](name, value)
        if encoded is not None:
            out[name] = encoded
    return out


def change_request(
    table: str,
    from_snapshot: Optional[int] = None,
    to_snapshot: Optional[int] = None,
    columns: Optional[Iterable[str]] = None,
    filter: Optional[str] = None,
    identity: Optional[Iterable[str]] = None,
    fold_updates: bool = False,
    net_changes: bool = False,
    from_timestamp_ms: Optional[int] = None,
    to_timestamp_ms: Optional[int] = None,
    compression: Optional[str] = None,
    layout: Optional[str] = None,
    max_endpoints: Optional[int] = None,
    **options: "Unpack[ChangeOptions]",
) -> Dict[str, Any]:
    """Validate the arguments of a change request and return its JSON object.

    The object holds only the fields that are set, in proto field order,
    with int64 values as strings. See :meth:`sluice.Client.changes` for the
    meaning of each argument.

    Raises:
        TypeError: An argument of the wrong type (e.g. ``columns="id"``).
        InvalidArgument: A value the server would refuse: an empty table,
            both ``from_snapshot`` and ``from_timestamp_ms``, an unknown
            compression, a duplicate column, ``max_endpoints`` below 1.

    ``from_snapshot`` and ``to_snapshot`` may be a tag name (a ``str``),
    sent as ``from_ref`` / ``to_ref``; ``options`` are the
    :class:`ChangeOptions` (``ref``, ``lineage``).
    """
    if not isinstance(table, str):
        raise TypeError(f"table must be a str, not {type(table).__name__}")
    if not table.strip():
        raise InvalidArgument("table is required")
    req: Dict[str, Any] = {"table": table}
    from_id, from_ref = _snapshot_or_tag("from_snapshot", from_snapshot)
    to_id, to_ref = _snapshot_or_tag("to_snapshot", to_snapshot)
    fields = {
        "from_snapshot": from_id,
        "from_timestamp_ms": _int64("from_timestamp_ms", from_timestamp_ms),
        "to_snapshot": to_id,
        "to_timestamp_ms": _int64("to_timestamp_ms", to_timestamp_ms),
    }
    if from_snapshot is not None and fields["from_timestamp_ms"] is not None:
        raise InvalidArgument("give from_snapshot or from_timestamp_ms, not both")
    if to_snapshot is not None and fields["to_timestamp_ms"] is not None:
        raise InvalidArgument("give to_snapshot or to_timestamp_ms, not both")
    if from_timestamp_ms is not None and to_timestamp_ms is not None and from_timestamp_ms > to_timestamp_ms:
        raise InvalidArgument(f"from_timestamp_ms {from_timestamp_ms} is after to_timestamp_ms {to_timestamp_ms}")
    req.update((k, v) for k, v in fields.items() if v is not None)
    cols = _names("columns", columns)
    if cols:
        req["columns"] = cols
    if filter is not None:
        if not isinstance(filter, str):
            raise TypeError(f"filter must be a str (a SQL boolean expression), not {type(filter).__name__}")
        if filter.strip():
            req["filter"] = filter
    ident = _names("identity", identity)
    if ident:
        req["identity"] = ident
    if _bool("fold_updates", fold_updates):
        req["fold_updates"] = True
    if _bool("net_changes", net_changes):
        req["net_changes"] = True
    if compression is not None:
        if not isinstance(compression, str):
            raise TypeError(f"compression must be a str, not {type(compression).__name__}")
        if compression not in COMPRESSIONS:
            raise InvalidArgument(f'compression {compression!r}: want None or "" (none), "lz4" or "zstd"')
        if compression:
            req["compression"] = compression
    if layout is not None:
        if not isinstance(layout, str):
            raise TypeError(f"layout must be a str, not {type(layout).__name__}")
        if layout not in LAYOUTS:
            raise InvalidArgument(f'layout {layout!r}: want None or "" (the row: op, before, after, snapshot, ts) '
                                  f'or "flat"')
        if layout == "flat" and fold_updates:
            raise InvalidArgument("layout 'flat' holds one image per row, so not fold_updates (two images in one row)")
        if layout:
            req["layout"] = layout
    if max_endpoints is not None:
        if isinstance(max_endpoints, bool) or not isinstance(max_endpoints, int):
            raise TypeError(f"max_endpoints must be an int, not {type(max_endpoints).__name__}")
        if max_endpoints < 1:
            raise InvalidArgument(f"max_endpoints {max_endpoints}: want 1 or more")
        if max_endpoints > 1:
            req["max_endpoints"] = max_endpoints
    req.update(encode_options(options))
    refs = {"from_ref": from_ref, "to_ref": to_ref}
    req.update((k, v) for k, v in refs.items() if v is not None)
    return req


def encode(req: Dict[str, Any]) -> bytes:
    """Encode a request object as compact UTF-8 JSON bytes."""
    return json.dumps(req, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
