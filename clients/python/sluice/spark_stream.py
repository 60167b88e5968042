"""The streaming half of the ``sluice`` Spark format:
``spark.readStream.format("sluice")``.

An offset is a snapshot cursor, ``{"commit_seq": n, "snapshot": id}``:
the position after that snapshot on the table's main branch
(``{"commit_seq": 0, "snapshot": -1}`` is before the first). Each
micro-batch reads one window, ``(start.snapshot, end.snapshot]``, planned
and split like a batch read (one partition per endpoint). Spark's
checkpoint holds the offsets, so a query restarted from its checkpoint
reads the same windows again and an idempotent sink sees each change once.

Options, besides those of a batch read (:mod:`sluice.spark`; not the
window's ends, which the offsets are, nor ``net_changes``):

- ``starting``: where a new query starts: ``latest`` (the default: changes
  after the current snapshot), ``earliest`` (the whole history) or a
  snapshot id (changes after it). A query restarted from its checkpoint
  resumes there instead.
- ``consumer``: a durable consumer id; once Spark has committed a
  micro-batch (when it asks for the next one, at the next trigger), the
  source acknowledges the batch's end snapshot, so the consumer's
  progress and lag (``client.list_consumers``, the server's metrics)
  follow the query. The checkpoint stays the source of truth: a failed ack
  is logged, not raised.
- ``maxSnapshotsPerTrigger``, ``maxRowsPerTrigger`` (Spark 4.2+): admit at
  most this many snapshots, or snapshots whose estimated change rows add
  up to at most this many (from their summaries: added and deleted
  records), per micro-batch; never less than one snapshot, and never part
  of one. ``Trigger.AvailableNow`` and ``Once`` read everything available.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, Iterator, List, Optional, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from .client import Client
from .engine_options import ReadOptions, _int
from .errors import InvalidArgument, NotFound
from .parallel import plan, read_part
from .spark import PartPartition, data_columns, part_of, with_request

__all__ = ["SluiceStreamReader", "BEFORE_HISTORY", "estimated_rows"]

log = logging.getLogger("sluice.spark")

#: The offset before a table's first snapshot.
BEFORE_HISTORY: Dict[str, int] = {"commit_seq": 0, "snapshot": -1}

# Snapshot summary keys whose counts are change rows (Iceberg's; a Delta
# version's operation metrics use the same names where Sluice reports them).
_ROW_KEYS = ("added-records", "deleted-records", "added-position-deletes", "added-equality-deletes")

try:  # Spark 4.2+
    from pyspark.sql.streaming import datasource as _limits

    ADMISSION_CONTROL = hasattr(_limits, "ReadMaxRows")
    _AvailableNow: Any = _limits.SupportsTriggerAvailableNow
except ImportError:  # pragma: no cover - Spark 4.0 and 4.1: no admission control
    ADMISSION_CONTROL = False
    _AvailableNow = object


def estimated_rows(snapshot: Dict[str, Any]) -> int:
    """A snapshot's change rows as its summary counts them (at least 1;
    0 for a ``replace``, which changes no row)."""
    if snapshot.get("operation") == "replace":
        return 0
    summary = snapshot.get("summary") or {}
    n = 0
    for k in _ROW_KEYS:
        try:
            n += int(summary.get(k, 0))
        except (TypeError, ValueError):
            continue
    return max(n, 1)


def _offset(commit_seq: int, snapshot: Optional[int]) -> Dict[str, int]:
    return {"commit_seq": int(commit_seq), "snapshot": -1 if snapshot is None else int(snapshot)}


class SluiceStreamReader(DataSourceStreamReader, _AvailableNow):
    """Micro-batches of a table's new snapshots, one window each."""

    def __init__(self, opts: ReadOptions, schema: pa.Schema) -> None:
        """Check the streaming options and keep the schema."""
        for k in ("from_snapshot", "to_snapshot", "from_timestamp_ms", "to_timestamp_ms", "net_changes"):
            if k in opts.request:
                raise InvalidArgument(f"option {k} is not for a stream: the offsets are the windows "
                                      f"(use starting=<snapshot id> to start after a snapshot)")
        extra = opts.extra
        self.starting = (extra.get("starting") or "latest").strip().lower()
        if self.starting not in ("latest", "earliest"):
            _int("starting", self.starting, 0)
        self.consumer = extra.get("consumer") or None
        self.max_snapshots = (_int("maxSnapshotsPerTrigger", extra["maxsnapshotspertrigger"], 1)
                              if extra.get("maxsnapshotspertrigger") else None)
        self.max_rows = (_int("maxRowsPerTrigger", extra["maxrowspertrigger"], 1)
                         if extra.get("maxrowspertrigger") else None)
        if (self.max_snapshots or self.max_rows) and not ADMISSION_CONTROL:
            raise InvalidArgument("maxSnapshotsPerTrigger and maxRowsPerTrigger need Spark 4.2 or newer")
        self.opts = with_request(opts, columns=data_columns(schema, opts.flat))
        self.arrow = schema
        self._client: Optional[Client] = None
        # Trigger.AvailableNow: the position when the query started, which
        # no micro-batch passes.
        self._target: Optional[Dict[str, int]] = None
        self._acked: Optional[int] = None  # the last snapshot acknowledged

    def __getstate__(self) -> Dict[str, Any]:
        """Pickle without the driver's connection."""
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    def _conn(self) -> Client:
        if self._client is None or self._client.closed:
            self._client = self.opts.connection.connect()
        return self._client

    def _position(self) -> Dict[str, int]:
        if self._target is not None:
            return dict(self._target)
        pos = self._conn().commit_seq(self.opts.table, ref=self.opts.request.get("ref"))
        return _offset(pos["commit_seq"], pos.get("snapshot"))

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: read up to the current snapshot, in as
        many micro-batches as the read limit makes, and no further."""
        self._target = None
        self._target = self._position()

    def initialOffset(self) -> Dict[str, int]:
        """Where a new query starts (the ``starting`` option)."""
        if self.starting == "latest":
            return self._position()
        if self.starting == "earliest":
            return dict(BEFORE_HISTORY)
        snap = int(self.starting)
        for s in self._conn().snapshots(self.opts.table, ref=self.opts.request.get("ref")):
            if s.get("snapshot") == snap:
                return _offset(s["commit_seq"], snap)
        raise NotFound(f"option starting: snapshot {snap} is not on {self.opts.table}'s lineage")

    def getDefaultReadLimit(self) -> Any:
        """The options' limit: ReadMaxRows for maxRowsPerTrigger, else
        ReadMaxFiles (one "file" is one snapshot) for
        maxSnapshotsPerTrigger, else everything available."""
        if self.max_rows:
            return _limits.ReadMaxRows(self.max_rows)
        if self.max_snapshots:
            return _limits.ReadMaxFiles(self.max_snapshots)
        return _limits.ReadAllAvailable()

    def latestOffset(self, start: Optional[Dict[str, Any]] = None, limit: Any = None) -> Dict[str, int]:
        """The end of the next micro-batch: the current snapshot, or the
        last snapshot the read limit admits after ``start``."""
        if start is not None:
            # Spark asks for the next batch once the one that ended at
            # start is committed: acknowledge start (commit(end) comes only
            # when the batch after it is planned).
            self._ack(start)
        latest = self._position()
        if start is None or limit is None or not ADMISSION_CONTROL or isinstance(limit, _limits.ReadAllAvailable):
            return latest
        if latest["commit_seq"] <= int(start["commit_seq"]):
            return dict(start)
        max_snaps = self.max_snapshots
        max_rows = self.max_rows
        if isinstance(limit, _limits.ReadMaxFiles):
            max_snaps = limit.max_files
        elif isinstance(limit, _limits.ReadMaxRows):
            max_rows = limit.max_rows
        pending = [s for s in self._conn().snapshots(self.opts.table, ref=self.opts.request.get("ref"))
                   if int(start["commit_seq"]) < int(s["commit_seq"]) <= latest["commit_seq"]]
        admitted: List[Dict[str, Any]] = []
        rows = 0
        for s in pending:
            n = estimated_rows(s)
            if admitted and ((max_snaps and len(admitted) >= max_snaps) or (max_rows and rows + n > max_rows)):
                break
            admitted.append(s)
            rows += n
        if not admitted:
            return latest
        last = admitted[-1]
        return _offset(last["commit_seq"], last["snapshot"])

    def reportLatestOffset(self) -> Dict[str, int]:
        """The table's current position, for the query's progress."""
        return self._position()

    def partitions(self, start: Dict[str, Any], end: Dict[str, Any]) -> Sequence[InputPartition]:
        """Plan the window (start, end] and return one partition per
        endpoint (none when start is end)."""
        if int(end["commit_seq"]) <= int(start["commit_seq"]) or end["snapshot"] == start["snapshot"]:
            return []
        frm = None if int(start["snapshot"]) == -1 else int(start["snapshot"])
        req = dict(self.opts.request, from_snapshot=frm, to_snapshot=int(end["snapshot"]))
        req = {k: v for k, v in req.items() if v is not None}
        p = plan(self.opts.connection, self.opts.table, max_endpoints=self.opts.max_endpoints, **req)
        if not p.schema.equals(self.arrow, check_metadata=False):
            from .errors import FailedPrecondition

            raise FailedPrecondition(f"the window ({frm}, {end['snapshot']}] has schema {p.schema}, not the "
                                     f"stream's {self.arrow}: restart the query to read the new schema")
        return [PartPartition(part) for part in p.parts]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Stream one endpoint of a micro-batch's window."""
        yield from read_part(self.opts.connection, part_of(partition), self.arrow)

    def commit(self, end: Dict[str, Any]) -> None:
        """Spark has processed everything up to ``end``: acknowledge it for
        the durable consumer, if any (a failure is logged)."""
        self._ack(end)

    def _ack(self, offset: Dict[str, Any]) -> None:
        snapshot = int(offset.get("snapshot", -1))
        if not self.consumer or snapshot == -1 or snapshot == self._acked:
            return
        try:
            self._conn().ack(self.consumer, self.opts.table, snapshot, ref=self.opts.request.get("ref"))
            self._acked = snapshot
        except Exception as exc:  # noqa: BLE001 - the checkpoint is the truth; the ack is for metrics
            log.warning("sluice: ack of snapshot %s for consumer %s failed: %s", snapshot, self.consumer, exc)

    def stop(self) -> None:
        """Close the driver's connection."""
        if self._client is not None:
            self._client.close()
            self._client = None
