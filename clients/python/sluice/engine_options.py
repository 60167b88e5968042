"""The string options of an engine's reader, read into a connection and a
change request (shared by :mod:`sluice.spark` and :mod:`sluice.ray`).

Spark passes a data source's options as strings (``.option("columns",
"a,b")``); this module turns them into a :class:`sluice.parallel.Connection`
and the keyword arguments of :meth:`sluice.Client.changes`, refusing an
unknown option or a bad value with :class:`sluice.InvalidArgument`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .errors import InvalidArgument
from .parallel import Connection
from .request import change_request

__all__ = ["ReadOptions", "read_options", "CONNECTION_OPTIONS", "REQUEST_OPTIONS"]

#: Options that say how to connect (values are strings; files are read on
#: the driver and their bytes shipped to the workers).
CONNECTION_OPTIONS = ("uri", "token", "token_file", "user", "password", "tls_ca", "tls_cert", "tls_key",
                      "tls_server_name", "insecure_skip_verify", "timeout")

#: Options that shape the change request.
REQUEST_OPTIONS = ("table", "from_snapshot", "to_snapshot", "from_timestamp", "to_timestamp",
                   "from_timestamp_ms", "to_timestamp_ms", "columns", "filter", "identity", "layout",
                   "net_changes", "compression", "max_endpoints", "ref", "lineage")

#: The default number of parts a window is split into (the replicas
#: return fewer when the window has fewer snapshots or files).
DEFAULT_MAX_ENDPOINTS = 16

#: The layouts an engine reads: ``flat`` (the default: the data columns,
#: ``_change_type``, ``_commit_version``, ``_commit_timestamp``) and
#: ``row`` (``op``, ``before``, ``after``, ``snapshot``, ``ts``).
ENGINE_LAYOUTS = {"flat": "flat", "row": None}


@dataclass(frozen=True)
class ReadOptions:
    """A parsed set of reader options.

    Attributes:
        connection: How to connect.
        table: ``namespace.table``.
        request: Keyword arguments of :meth:`sluice.Client.changes` (the
            window, columns, filter, identity, layout...), validated.
        max_endpoints: At most this many parts per window.
        extra: The options not read here, lower-cased (a streaming
            reader's own), for the caller to check.
    """

    connection: Connection
    table: str
    request: Dict[str, Any]
    max_endpoints: int = DEFAULT_MAX_ENDPOINTS
    extra: Dict[str, str] = field(default_factory=dict)

    @property
    def flat(self) -> bool:
        """Whether the rows come in the flat layout."""
        return self.request.get("layout") == "flat"


def _bool(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no", ""):
        return False
    raise InvalidArgument(f"option {name} {value!r}: want true or false")


def _int(name: str, value: str, minimum: Optional[int] = None) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise InvalidArgument(f"option {name} {value!r}: want an integer") from None
    if minimum is not None and n < minimum:
        raise InvalidArgument(f"option {name} {n}: want {minimum} or more")
    return n


def _names(name: str, value: str) -> Optional[List[str]]:
    names = [n.strip() for n in value.split(",")]
    if names == [""]:
        return None
    if any(not n for n in names):
        raise InvalidArgument(f"option {name} {value!r}: an empty column name (want a,b,c)")
    return names


def timestamp_ms(name: str, value: str) -> int:
    """Read an ISO 8601 time (``2026-11-30T08:15:00Z``; without a zone:
    UTC) as milliseconds since the epoch."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(f"option {name} {value!r}: want an ISO 8601 time such as "
                              f"2026-11-30T08:15:00Z") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    return int(t.timestamp() * 1000)


def _read_file(name: str, path: str) -> bytes:
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise InvalidArgument(f"option {name}: cannot read {path}: {exc.strerror or exc}") from None


def _connection(opts: Mapping[str, str]) -> Connection:
    uri = opts.get("uri")
    if not uri or not uri.strip():
        raise InvalidArgument("option uri is required (grpc://host:port)")
    token = opts.get("token")
    if opts.get("token_file"):
        if token:
            raise InvalidArgument("give option token or token_file, not both")
        token = _read_file("token_file", opts["token_file"]).decode("utf-8").strip()
    timeout = None
    if opts.get("timeout"):
        try:
            timeout = float(opts["timeout"])
        except ValueError:
            raise InvalidArgument(f"option timeout {opts['timeout']!r}: want seconds") from None
        if timeout <= 0:
            raise InvalidArgument(f"option timeout {timeout}: want a positive number of seconds")
    cert = _read_file("tls_cert", opts["tls_cert"]) if opts.get("tls_cert") else None
    key = _read_file("tls_key", opts["tls_key"]) if opts.get("tls_key") else None
    return Connection(
        uri=uri,
        token=token or None,
        user=opts.get("user") or None,
        password=opts.get("password"),
        tls_root_certs=_read_file("tls_ca", opts["tls_ca"]) if opts.get("tls_ca") else None,
        cert_chain=cert,
        private_key=key,
        override_hostname=opts.get("tls_server_name") or None,
        disable_server_verification=_bool("insecure_skip_verify", opts.get("insecure_skip_verify", "")),
        timeout=timeout,
    )


def read_options(options: Mapping[str, Any], *, extra: Tuple[str, ...] = (),
                 default_layout: str = "flat") -> ReadOptions:
    """Read an engine's string options.

    Args:
        options: The options, any case (``fromSnapshot`` is
            ``fromsnapshot``; ``from_snapshot`` is the documented
            spelling).
        extra: Further option names the caller reads itself (kept in
            :attr:`ReadOptions.extra`).
        default_layout: The layout without a ``layout`` option.

    Raises:
        InvalidArgument: an unknown option, a missing ``uri`` or ``table``,
            a value that does not parse, or a request the server would
            refuse (both a snapshot and a time for one end, ...).
    """
    opts = {str(k).lower(): "" if v is None else str(v) for k, v in options.items()}
    known = set(CONNECTION_OPTIONS) | set(REQUEST_OPTIONS) | {e.lower() for e in extra} | {"path"}
    unknown = sorted(k for k in opts if k not in known)
    if unknown:
        raise InvalidArgument(f"unknown option {', '.join(unknown)}: the options are "
                              f"{', '.join(CONNECTION_OPTIONS + REQUEST_OPTIONS + extra)}")
    table = opts.get("table") or opts.get("path") or ""
    if not table.strip():
        raise InvalidArgument("option table is required (namespace.table)")
    layout_name = (opts.get("layout") or default_layout).strip().lower()
    if layout_name not in ENGINE_LAYOUTS:
        raise InvalidArgument(f"option layout {layout_name!r}: want flat or row")
    ends: Dict[str, Optional[int]] = {}
    for end in ("from", "to"):
        snap, ts, ts_ms = opts.get(f"{end}_snapshot"), opts.get(f"{end}_timestamp"), opts.get(f"{end}_timestamp_ms")
        if ts and ts_ms:
            raise InvalidArgument(f"give option {end}_timestamp or {end}_timestamp_ms, not both")
        ends[f"{end}_snapshot"] = _int(f"{end}_snapshot", snap) if snap else None
        ends[f"{end}_timestamp_ms"] = (timestamp_ms(f"{end}_timestamp", ts) if ts
                                       else _int(f"{end}_timestamp_ms", ts_ms) if ts_ms else None)
    request: Dict[str, Any] = {
        **{k: v for k, v in ends.items() if v is not None},
        "columns": _names("columns", opts.get("columns", "")),
        "filter": opts.get("filter") or None,
        "identity": _names("identity", opts.get("identity", "")),
        "net_changes": _bool("net_changes", opts.get("net_changes", "")),
        "compression": opts.get("compression") or None,
        "layout": ENGINE_LAYOUTS[layout_name],
        "ref": opts.get("ref") or None,
        "lineage": _bool("lineage", opts.get("lineage", "")),
    }
    request = {k: v for k, v in request.items() if v is not None and v is not False}
    change_request(table, **request)  # the client's own checks, before any call
    max_endpoints = _int("max_endpoints", opts["max_endpoints"], 1) if opts.get("max_endpoints") \
        else DEFAULT_MAX_ENDPOINTS
    if request.get("net_changes"):
        max_endpoints = 1  # a net window is not split (the server refuses to)
    return ReadOptions(_connection(opts), table.strip(), request, max_endpoints,
                       {k: v for k, v in opts.items() if k in {e.lower() for e in extra}})
