"""Subscriptions: follow a table's change feed, with durable consumer
progress."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.flight as flight

from ._wire import Wire, parse_metadata
from .errors import Cancelled, FailedPrecondition, InvalidArgument, SluiceError, Unavailable, translated
from .frames import to_pandas, to_polars
from .request import STREAM_OPTIONS, change_request, encode, encode_options

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import polars
    from typing_extensions import Unpack

    from .request import StreamOptions

    from .client import Client

__all__ = ["DEFAULT_MAX_BACKOFF", "START_MODES", "FollowBatch", "Subscription"]

#: The default longest wait, in seconds, between the reconnects of a
#: subscription (``max_backoff`` of :meth:`Client.subscribe`): the wait
#: starts at 0.2 s and doubles up to it. The same as the Go client's
#: ``DefaultMaxBackoff`` and the server's ``--max-backoff``.
DEFAULT_MAX_BACKOFF = 30.0

# The first wait before a reconnect, in seconds.
_FIRST_BACKOFF = 0.2

#: The start modes of a stream (the ``start`` of :meth:`Client.subscribe`).
START_MODES = ("latest-full", "latest", "from-snapshot", "from-snapshot-full", "from-timestamp")

_CONSUMER_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@/-")


def _consumer(consumer: Any) -> Optional[str]:
    if consumer is None:
        return None
    if not isinstance(consumer, str):
        raise TypeError(f"consumer must be a str, not {type(consumer).__name__}")
    if not consumer or len(consumer) > 200 or not set(consumer) <= _CONSUMER_CHARS:
        raise InvalidArgument(f"consumer id {consumer!r}: 1 to 200 letters, digits and . _ : @ / -")
    return consumer


def stream_request(table: str, consumer: Optional[str], start: Optional[str], follow: bool,
                   from_snapshot: Optional[int], from_timestamp_ms: Optional[int],
                   columns: Optional[Sequence[str]], filter: Optional[str], identity: Optional[Sequence[str]],
                   fold_updates: bool, compression: Optional[str],
                   layout: Optional[str] = None, **options: "Unpack[StreamOptions]") -> Dict[str, Any]:
    """Validate the arguments of a stream request and return its JSON
    object (see :meth:`Client.subscribe`; ``options`` are the
    :class:`sluice.StreamOptions`)."""
    req = change_request(table, from_snapshot, None, columns, filter, identity, fold_updates, False,
                         from_timestamp_ms, None, compression, layout)
    req.update(encode_options(options, STREAM_OPTIONS))
    if not isinstance(follow, bool):
        raise TypeError(f"follow must be a bool, not {type(follow).__name__}")
    if start is not None:
        if not isinstance(start, str):
            raise TypeError(f"start must be a str, not {type(start).__name__}")
        if start not in START_MODES:
            raise InvalidArgument(f"start {start!r}: want one of {', '.join(START_MODES)}")
    if start in ("from-snapshot", "from-snapshot-full") and from_snapshot is None:
        raise InvalidArgument(f"start {start!r} needs from_snapshot")
    if start == "from-timestamp" and from_timestamp_ms is None:
        raise InvalidArgument("start 'from-timestamp' needs from_timestamp_ms")
    consumer = _consumer(consumer)
    if follow:
        req["follow"] = True
    if start:
        req["start"] = start
    if consumer:
        req["consumer"] = consumer
    if not (follow or start or consumer):
        # A stream request without any of the three would be a plain window.
        req["start"] = "latest-full"
    return req


@dataclass(frozen=True)
class FollowBatch:
    """One batch of a :class:`Subscription`: change rows with their
    ``app_metadata``.

    Attributes:
        batch: The change rows (``op``, ``before``, ``after``, ``snapshot``,
            ``ts``); possibly 0 rows (a snapshot's completion, a heartbeat).
        metadata: The parsed ``app_metadata``.
        redelivered: True when a reconnect of the subscription delivers this
            snapshot again: some or all of its batches came before the
            stream broke off (it resumes at the start of the snapshot it
            was in the middle of). Consumers apply the feed idempotently.
    """

    batch: pa.RecordBatch
    metadata: Dict[str, Any]
    redelivered: bool = False
    _subscription: Optional["Subscription"] = field(default=None, repr=False, compare=False)

    @property
    def snapshot(self) -> Optional[int]:
        """The snapshot whose changes the batch holds (for a heartbeat: the
        last snapshot streamed, -1 before the first)."""
        return self.metadata.get("snapshot")

    @property
    def commit_seq(self) -> Optional[int]:
        """The commit sequence of that snapshot."""
        return self.metadata.get("commit_seq")

    @property
    def snapshot_complete(self) -> bool:
        """True on a snapshot's last batch: a checkpoint (:meth:`ack`)."""
        return bool(self.metadata.get("snapshot_complete", False))

    @property
    def timestamp_ms(self) -> Optional[int]:
        """The snapshot's commit time, in milliseconds since the epoch."""
        return self.metadata.get("timestamp_ms")

    @property
    def full_state(self) -> bool:
        """True for rows of a full state (``latest-full``,
        ``from-snapshot-full``): the table's live rows as inserts."""
        return bool(self.metadata.get("full_state", False))

    @property
    def heartbeat(self) -> bool:
        """True for a heartbeat: a 0-row batch an idle stream sends."""
        return bool(self.metadata.get("heartbeat", False))

    @property
    def resync(self) -> bool:
        """True on the 0-row batch that starts a stream which lost its
        place: the snapshot it would go on from (:attr:`snapshot`, -1 for
        the start of the history) has expired. With ``on_gap="resync"`` the
        full state at :attr:`current_snapshot` follows; else the stream
        ends with :class:`FailedPrecondition`."""
        return bool(self.metadata.get("resync", False))

    @property
    def earliest_snapshot(self) -> Optional[int]:
        """On a :attr:`resync` batch: the earliest snapshot a stream can
        start from now."""
        return self.metadata.get("earliest_snapshot")

    @property
    def current_snapshot(self) -> Optional[int]:
        """On a :attr:`resync` batch: the table's current snapshot."""
        return self.metadata.get("current_snapshot")

    @property
    def coalesced_from(self) -> Optional[int]:
        """On the batches of a coalesced window: the snapshot the stream
        stood at. The commits after it are gone while it stayed readable
        (a protected consumer's tag), so the batch holds net changes from
        its state to the state at :attr:`snapshot`. None on other batches."""
        return self.metadata.get("coalesced_from")

    @property
    def num_rows(self) -> int:
        """The number of change rows in the batch."""
        return self.batch.num_rows

    def to_pandas(self, *, flatten: bool = False) -> "pandas.DataFrame":
        """Return the batch's rows as a DataFrame with exact values (int64
        ids stay int64, nulls are ``<NA>``): see :func:`sluice.to_pandas`."""
        return to_pandas(self.batch, flatten=flatten)

    def to_polars(self, *, flatten: bool = False) -> "polars.DataFrame":
        """Return the batch's rows as a ``polars.DataFrame``: see
        :func:`sluice.to_polars`."""
        return to_polars(self.batch, flatten=flatten)

    def ack(self) -> Dict[str, Any]:
        """Acknowledge this checkpoint: the consumer has processed every
        change up to and including :attr:`snapshot`; a later subscription
        with the same consumer resumes right after it. The server stores it
        durably before it answers.

        With ``reconnect=True``, an ack survives an outage as the stream
        does: while the server cannot be reached (``UNAVAILABLE``) it is
        sent again after the subscription's backoff until the server
        records it, whether the stream has reconnected yet or not (an ack
        names its snapshot, not a stream). Without ``reconnect``, an
        unreachable server raises at once.

        Returns:
            The consumer's progress (see :meth:`Client.consumer_progress`).

        Raises:
            FailedPrecondition: the batch is not a checkpoint (its snapshot
                is not complete), or the subscription has no consumer.
            Cancelled: the subscription was closed while the ack waited for
                the server: it was not delivered.
            SluiceError: the server refused the ack; it was not recorded.
        """
        sub = self._subscription
        if sub is None or sub.consumer is None:
            raise FailedPrecondition("ack needs a subscription with a consumer id")
        snapshot = self.snapshot
        if not self.snapshot_complete or self.heartbeat or snapshot is None:
            raise FailedPrecondition("only a batch whose snapshot_complete is true is a checkpoint to acknowledge")
        return sub._ack(snapshot)


class Subscription:
    """An iterator of :class:`FollowBatch` over a table's change stream.

    Made by :meth:`Client.subscribe`. Iterating blocks until the next batch;
    a follow stream never ends by itself. :meth:`close` (also from another
    thread, or by leaving a ``with`` block) cancels it, and the iteration
    then stops. A failure raises a :class:`SluiceError`; with
    ``reconnect=True``, a stream that ends with ``UNAVAILABLE`` (the server
    restarted or shut down) is opened again after a backoff, and one that
    ends because the table's schema changed (``FAILED_PRECONDITION``
    "schema changed") at once, its batches then in the new schema. The new
    stream resumes exactly where the old one stood: after the last snapshot
    it delivered completely (or the last snapshot a heartbeat reported), or
    with the whole full state again when the old one broke off inside it,
    or as first asked when nothing had come yet.

    Attributes:
        table, consumer: What the subscription follows, and as whom.
        reconnects: How many times the stream was opened again.
        redelivered_batches: Batches delivered again after a reconnect.
        last_metadata: The ``app_metadata`` of the last batch received
            (heartbeats included).
    """

    def __init__(self, client: "Client", wire: Wire, req: Dict[str, Any], *, heartbeats: bool, reconnect: bool,
                 max_backoff: float, protect: bool = False) -> None:
        self.client = client
        self._protect = protect
        self.table: str = req["table"]
        self.consumer: Optional[str] = req.get("consumer")
        self._wire = wire
        self._req = req
        self._heartbeats = heartbeats
        self._reconnect = reconnect
        self._max_backoff = max_backoff
        # _lock guards _stream and _closed; _closing is set with _closed,
        # and wakes the waits between reconnects and between ack attempts.
        self._lock = threading.Lock()
        self._stream: Optional[flight.FlightStreamReader] = None
        self._closed = False
        self._closing = threading.Event()
        self._iter: Optional[Iterator[FollowBatch]] = None
        self.reconnects = 0
        self.redelivered_batches = 0
        self.last_metadata: Dict[str, Any] = {}
        # Where a reconnect resumes: (start mode, snapshot), None for the
        # request as first made.
        self._resume: Optional[Tuple[str, int]] = None
        # The highest commit_seq of a batch delivered, and what it was
        # when the stream was last opened again.
        self._delivered_seq: Optional[int] = None
        self._redeliver_upto: Optional[int] = None
        self._open()

    # -- the stream -------------------------------------------------------

    def _request(self) -> Dict[str, Any]:
        req = dict(self._req)
        if self.reconnects and self._resume is not None:
            # An explicit start wins over the consumer's progress, which
            # may lag behind what this subscription delivered.
            req.pop("from_timestamp_ms", None)
            req.pop("from_ref", None)
            req["start"], snapshot = self._resume
            req["from_snapshot"] = str(snapshot)
        return req

    def _track(self, b: "FollowBatch") -> None:
        """Move the resume point past a delivered batch."""
        snapshot = b.snapshot
        if snapshot is None:
            return
        if b.heartbeat:
            # Heartbeats come between snapshots and name the last one
            # streamed completely (-1: none yet).
            if snapshot >= 0:
                self._resume = ("from-snapshot", snapshot)
            return
        seq = b.commit_seq
        if seq is not None and (self._delivered_seq is None or seq > self._delivered_seq):
            self._delivered_seq = seq
        if b.snapshot_complete:
            self._resume = ("from-snapshot", snapshot)
        elif b.full_state and self._resume is None:
            self._resume = ("from-snapshot-full", snapshot)

    def _open(self) -> None:
        stream = self._wire.open_stream(flight.Ticket(encode(self._request())))
        with self._lock:
            if not self._closed:
                self._stream = stream
                return
        self._wire.untrack(stream)
        stream.cancel()
        raise FailedPrecondition("the subscription is closed")

    def _ack(self, snapshot: int) -> Dict[str, Any]:
        """Deliver an ack of snapshot, through an outage with reconnect."""
        body: Dict[str, Any] = {"consumer": self.consumer, "table": self.table, "snapshot": snapshot}
        if self._req.get("ref"):
            body["ref"] = self._req["ref"]  # the consumer's progress is the ref's
        if self._protect:
            body["protect"] = True
        backoff = _FIRST_BACKOFF
        while True:
            try:
                return self._wire.action("ack", body)
            except Unavailable as exc:
                if not self._reconnect:
                    raise
                if self._closing.wait(backoff):
                    raise Cancelled(f"the ack of snapshot {snapshot} for consumer {self.consumer!r} on "
                                    f"{self.table} was not delivered: the subscription was closed while the "
                                    f"server was unreachable ({exc.message})") from exc
            backoff = min(backoff * 2, self._max_backoff)

    def _current(self) -> flight.FlightStreamReader:
        """The stream open now (``_open`` sets it before the constructor
        returns)."""
        stream = self._stream
        if stream is None:  # pragma: no cover - _open ran in __init__
            raise FailedPrecondition("the subscription has no stream")
        return stream

    def _batches(self) -> Iterator[FollowBatch]:
        backoff = _FIRST_BACKOFF
        while True:
            stream = self._current()
            schema_changed = False
            try:
                with translated():
                    while True:
                        try:
                            chunk = stream.read_chunk()
                        except StopIteration:
                            # Bounded streams (follow=False) end here.
                            return
                        if self._closed:
                            return
                        backoff = _FIRST_BACKOFF
                        meta = parse_metadata(chunk.app_metadata)
                        self.last_metadata = meta
                        data = chunk.data
                        if data is None:
                            data = pa.RecordBatch.from_pylist([], schema=stream.schema)
                        b = FollowBatch(data, meta, self._redelivered(meta), self)
                        if b.redelivered:
                            self.redelivered_batches += 1
                        self._track(b)
                        if b.heartbeat and not self._heartbeats:
                            continue
                        yield b
            except SluiceError as exc:
                if self._closed:
                    return
                schema_changed = isinstance(exc, FailedPrecondition) and "schema changed" in exc.message
                if not (self._reconnect and (isinstance(exc, Unavailable) or schema_changed)):
                    raise
            finally:
                self._wire.untrack(stream)
            # Reconnect: at once for a new schema, else after a backoff.
            self._redeliver_upto = self._delivered_seq
            wait = 0.0 if schema_changed else backoff
            while True:
                if self._closing.wait(wait):
                    return
                wait = backoff = min(backoff * 2, self._max_backoff)
                self.reconnects += 1
                try:
                    self._open()
                    break
                except Unavailable:
                    continue

    def _redelivered(self, meta: Dict[str, Any]) -> bool:
        if not self.reconnects or meta.get("heartbeat") or self._redeliver_upto is None:
            return False
        seq = meta.get("commit_seq")
        return seq is not None and seq <= self._redeliver_upto

    # -- iterator protocol ------------------------------------------------

    def __iter__(self) -> "Subscription":
        """Return the subscription itself."""
        return self

    def __next__(self) -> FollowBatch:
        """Return the next batch; raise StopIteration once closed (or at the
        end of a stream that does not follow)."""
        if self._iter is None:
            self._iter = self._batches()
        return next(self._iter)

    @property
    def schema(self) -> pa.Schema:
        """The schema of the change rows (blocks for the first message)."""
        stream = self._current()
        with translated():
            schema: pa.Schema = stream.schema
            return schema

    def close(self) -> None:
        """Cancel the stream. Idempotent; safe from another thread."""
        with self._lock:
            self._closed = True
            self._closing.set()
            stream = self._stream
        if stream is not None:
            try:
                stream.cancel()
            except Exception:  # noqa: BLE001 - best effort
                pass

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> "Subscription":
        """Return the subscription; :meth:`close` it on exit."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Close the subscription."""
        self.close()

    def __repr__(self) -> str:
        """Describe the subscription."""
        return (f"<sluice.Subscription {self.table} consumer={self.consumer!r} "
                f"{'closed' if self._closed else 'open'}>")
