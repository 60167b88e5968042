"""The Sluice client: change feeds and control actions over Arrow Flight."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.flight as flight

from ._wire import Headers, Wire, basic_credentials, header_list, parse_metadata
from .errors import PYARROW_ERRORS, FailedPrecondition, Internal, InvalidArgument, from_exception, translated
from .frames import to_pandas, to_polars
from .request import change_request, encode
from .subscription import DEFAULT_MAX_BACKOFF, FollowBatch, Subscription, stream_request

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    import polars
    from typing_extensions import Unpack

    from .request import ChangeOptions, StreamOptions

__all__ = ["DEFAULT_URI", "ChangeBatch", "Client", "FollowBatch", "Subscription", "connect"]

#: The address a Sluice server listens on by default.
DEFAULT_URI = "grpc://127.0.0.1:8815"



def normalize_uri(uri: str) -> str:
    """Return a Flight URI for ``uri``, which may be ``"host:port"``.

    ``"host:port"`` becomes ``"grpc://host:port"``; a URI with a scheme
    (``grpc://``, ``grpc+tls://``, ``grpc+unix://``...) is returned as is.

    Raises:
        TypeError: ``uri`` is not a str.
        InvalidArgument: ``uri`` is empty.
    """
    if not isinstance(uri, str):
        raise TypeError(f"uri must be a str, not {type(uri).__name__}")
    uri = uri.strip()
    if not uri:
        raise InvalidArgument("uri is empty: want grpc://host:port or host:port")
    if "://" not in uri:
        uri = "grpc://" + uri
    return uri


@dataclass(frozen=True)
class ChangeBatch:
    """One record batch of a change feed with its ``app_metadata``.

    Attributes:
        batch: The change rows (``op``, ``before``, ``after``, ``snapshot``,
            ``ts``); possibly 0 rows (a heartbeat or a checkpoint).
        metadata: The batch's parsed ``app_metadata``: ``snapshot``,
            ``commit_seq``, ``snapshot_complete``, ``timestamp_ms``, ``rows``
            (and any key a newer server adds).
    """

    batch: pa.RecordBatch
    metadata: Dict[str, Any]

    @property
    def snapshot(self) -> Optional[int]:
        """The snapshot whose changes the batch holds."""
        return self.metadata.get("snapshot")

    @property
    def commit_seq(self) -> Optional[int]:
        """The commit sequence of that snapshot."""
        return self.metadata.get("commit_seq")

    @property
    def snapshot_complete(self) -> bool:
        """True when this is the snapshot's last batch: a consumer may
        checkpoint ``snapshot`` / ``commit_seq`` once it has processed it."""
        return bool(self.metadata.get("snapshot_complete", False))

    @property
    def timestamp_ms(self) -> Optional[int]:
        """The snapshot's commit time, in milliseconds since the epoch."""
        return self.metadata.get("timestamp_ms")

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


class Client:
    """A connection to a Sluice server.

    Create one with :func:`sluice.connect`. A client holds one gRPC channel;
    use it as a context manager or call :meth:`close` when done. Closing the
    client also cancels the streams it still has open.

    Every method raises :class:`sluice.SluiceError` (a subclass matching the
    gRPC code) on failure.
    """

    def __init__(
        self,
        flight_client: flight.FlightClient,
        *,
        token: Optional[str] = None,
        headers: Optional[Headers] = None,
        timeout: Optional[float] = None,
        uri: Optional[str] = None,
        connect_kwargs: Optional[Mapping[str, Any]] = None,
        user: Optional[str] = None,
        password: Optional[str] = None,
    ) -> None:
        """Wrap an existing ``pyarrow.flight.FlightClient``.

        Args:
            flight_client: The Flight client to use; the Client owns it and
                closes it in :meth:`close`.
            token: Bearer token sent as ``authorization: Bearer <token>``
                on every call.
            headers: Extra headers sent on every call.
            timeout: Timeout in seconds of each planning and control call
                (GetFlightInfo, GetSchema, DoAction). Streams (DoGet) are
                not bounded by it: a long read is not an error.
            uri: The server's URI, for display.
            connect_kwargs: ``pyarrow.flight.FlightClient`` arguments used
                to connect to an endpoint served at another location.
            user, password: Basic credentials (the server's
                ``--auth-mode basic``): see :func:`sluice.connect`. The
                Handshake runs here.
        """
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or timeout <= 0):
            raise TypeError("timeout must be a positive number of seconds or None")
        header_items = header_list(token, headers)
        basic = basic_credentials(user, password, token, header_items)
        self._uri = uri
        self._wire = Wire(flight_client, header_items, basic=basic, timeout=timeout, connect_kwargs=connect_kwargs)
        self._wire.authenticate()

    # -- plumbing ---------------------------------------------------------

    @property
    def flight_client(self) -> flight.FlightClient:
        """The underlying ``pyarrow.flight.FlightClient`` (for calls this
        client does not wrap)."""
        return self._wire.flight

    def call_options(self, unary: bool = True) -> flight.FlightCallOptions:
        """Return the FlightCallOptions of a call: the headers (with basic
        credentials, the bearer token of the last Handshake), and for a
        unary call the timeout."""
        return self._wire.call_options(unary)

    def _action(self, name: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self._wire.action(name, body)

    # -- change feeds -----------------------------------------------------

    def flight_info(
        self,
        table: str,
        from_snapshot: Optional[int] = None,
        to_snapshot: Optional[int] = None,
        columns: Optional[Sequence[str]] = None,
        filter: Optional[str] = None,
        identity: Optional[Sequence[str]] = None,
        fold_updates: bool = False,
        net_changes: bool = False,
        from_timestamp_ms: Optional[int] = None,
        to_timestamp_ms: Optional[int] = None,
        compression: Optional[str] = None,
        layout: Optional[str] = None,
        *,
        max_endpoints: Optional[int] = None,
        **options: "Unpack[ChangeOptions]",
    ) -> flight.FlightInfo:
        """Plan a change window with GetFlightInfo and return the FlightInfo.

        The low-level step behind :meth:`changes`: the FlightInfo holds the
        output schema, the endpoints whose tickets pin the window, the row
        count when it is known in advance (else -1), and in its
        ``app_metadata`` a JSON summary of the pinned window. Arguments are
        those of :meth:`changes`, and ``max_endpoints``: split the window
        into at most this many endpoints (by snapshot, and a large
        snapshot that only adds rows by its data files), each with the
        locations of the replicas that serve it, for a parallel reader
        (:mod:`sluice.parallel`); not with ``net_changes``.
        """
        req = change_request(table, from_snapshot, to_snapshot, columns, filter, identity, fold_updates,
                             net_changes, from_timestamp_ms, to_timestamp_ms, compression, layout,
                             max_endpoints=max_endpoints, **options)
        descriptor = flight.FlightDescriptor.for_command(encode(req))
        return self._wire.call(lambda options: self._wire.flight.get_flight_info(descriptor, options=options))

    def _chunks(self, info: flight.FlightInfo) -> Iterator[Tuple[Optional[pa.RecordBatch], Optional[pa.Buffer]]]:
        """Yield (batch, app_metadata) of every endpoint of a FlightInfo, in
        order. A failure at any point raises a SluiceError: the iterator
        never ends early without one."""
        for endpoint in info.endpoints:
            yield from self._ticket_chunks(endpoint.ticket, self._wire.client_for(endpoint), info.schema)

    def _ticket_chunks(self, ticket: flight.Ticket, fc: flight.FlightClient, schema: Optional[pa.Schema],
                       ) -> Iterator[Tuple[Optional[pa.RecordBatch], Optional[pa.Buffer]]]:
        """Yield (batch, app_metadata) of one ticket's stream from ``fc``;
        with ``schema``, the stream must have it (metadata aside)."""
        wire = self._wire
        stream = wire.open_stream(ticket, fc)
        done = False
        try:
            with translated():
                if schema is not None and not stream.schema.equals(schema, check_metadata=False):
                    raise Internal(f"an endpoint streams schema {stream.schema} instead of the planned "
                                   f"schema {schema}")
                while True:
                    try:
                        chunk = stream.read_chunk()
                    except StopIteration:
                        break
                    if wire.closed:
                        raise FailedPrecondition("the client was closed during the read")
                    yield chunk.data, chunk.app_metadata
            done = True
        finally:
            wire.untrack(stream)
            if not done:
                # Abandoned or failed mid-stream: tell the server.
                try:
                    stream.cancel()
                except Exception:  # noqa: BLE001 - best effort on the way out
                    pass

    def read_ticket(self, ticket: bytes, schema: Optional[pa.Schema] = None) -> Iterator[ChangeBatch]:
        """Stream one endpoint's ticket from this client's server with DoGet.

        The step a parallel reader runs per endpoint (:mod:`sluice.parallel`
        reads each endpoint from its locations in turn). ``ticket`` is the
        ticket's bytes, as :meth:`flight_info` returned it; with ``schema``
        (the FlightInfo's), a stream in another schema raises
        :class:`sluice.Internal`. Batches come as :class:`ChangeBatch`
        objects with their ``app_metadata``; a failure at any point raises
        a :class:`SluiceError`.
        """
        if not isinstance(ticket, bytes):
            raise TypeError(f"ticket must be bytes, not {type(ticket).__name__}")
        empty = None
        for data, meta in self._ticket_chunks(flight.Ticket(ticket), self._wire.flight, schema):
            if data is None:
                if empty is None:
                    empty = pa.RecordBatch.from_pylist([], schema=schema)
                data = empty
            yield ChangeBatch(data, parse_metadata(meta))

    def batches(
        self,
        table: str,
        from_snapshot: Optional[int] = None,
        to_snapshot: Optional[int] = None,
        columns: Optional[Sequence[str]] = None,
        filter: Optional[str] = None,
        identity: Optional[Sequence[str]] = None,
        fold_updates: bool = False,
        net_changes: bool = False,
        from_timestamp_ms: Optional[int] = None,
        to_timestamp_ms: Optional[int] = None,
        compression: Optional[str] = None,
        layout: Optional[str] = None,
        **options: "Unpack[ChangeOptions]",
    ) -> Iterator[ChangeBatch]:
        """Stream a change window as :class:`ChangeBatch` objects.

        Like :meth:`changes`, but each batch comes with its parsed
        ``app_metadata``, the way to see checkpoints: once a batch with
        ``snapshot_complete`` true is processed, ``snapshot`` and
        ``commit_seq`` are a safe resume point (``from_snapshot=...``).

        The window is planned when this is called (planning errors raise
        here); the data is read as the iterator is consumed. Arguments are
        those of :meth:`changes`.

        Raises:
            SluiceError: on failure, also while iterating.
        """
        info = self.flight_info(table, from_snapshot, to_snapshot, columns, filter, identity, fold_updates,
                                net_changes, from_timestamp_ms, to_timestamp_ms, compression, layout, **options)
        return self._change_batches(info)

    def _change_batches(self, info: flight.FlightInfo) -> Iterator[ChangeBatch]:
        empty = None
        for data, meta in self._chunks(info):
            if data is None:
                # A metadata-only message (the contract says the server does
                # not send them); keep its metadata on an empty batch.
                if empty is None:
                    empty = pa.RecordBatch.from_pylist([], schema=info.schema)
                data = empty
            yield ChangeBatch(data, parse_metadata(meta))

    def changes(
        self,
        table: str,
        from_snapshot: Optional[int] = None,
        to_snapshot: Optional[int] = None,
        columns: Optional[Sequence[str]] = None,
        filter: Optional[str] = None,
        identity: Optional[Sequence[str]] = None,
        fold_updates: bool = False,
        net_changes: bool = False,
        from_timestamp_ms: Optional[int] = None,
        to_timestamp_ms: Optional[int] = None,
        compression: Optional[str] = None,
        layout: Optional[str] = None,
        **options: "Unpack[ChangeOptions]",
    ) -> pa.RecordBatchReader:
        """Read the row changes of a table over the window ``(from, to]``.

        Plans the window with GetFlightInfo (errors in the request raise
        here), then streams every endpoint's ticket with DoGet, in order, as
        one reader. The rows have the columns ``op`` (``insert``,
        ``delete``, ``update_before``, ``update_after``, ``update``),
        ``before`` and ``after`` (structs of the data columns), ``snapshot``
        and ``ts``.

        Args:
            table: ``"namespace.table"``.
            from_snapshot: Exclusive start snapshot id, or a tag name (a
                ``str``); None: the start of the table's history.
            to_snapshot: Inclusive end snapshot id, or a tag name; None: the
                current snapshot when the window is planned (later commits
                do not leak into the read).
            columns: Data columns of the images, in order; None: all.
            filter: SQL boolean expression over data columns, e.g.
                ``"country = 'SE' AND amount > 10"``.
            identity: Identity columns that pair deletes and inserts into
                updates; None: the table's identifier fields.
            fold_updates: Fold each update_before/update_after pair into one
                ``update`` row.
            net_changes: Collapse the window to its net changes per identity
                (or per whole row).
            from_timestamp_ms: Exclusive start as a commit time (ms since
                the epoch); not together with ``from_snapshot``.
            to_timestamp_ms: Inclusive end as a commit time; not together
                with ``to_snapshot``.
            compression: IPC body compression on the wire: None, ``"lz4"``
                or ``"zstd"``.
            layout: The shape of the rows: None (the default) for the row
                above; ``"flat"`` for one row per change with the image's
                data columns, then ``_change_type`` (``insert``,
                ``delete``, ``update_preimage``, ``update_postimage``),
                ``_commit_version`` and ``_commit_timestamp``, as Delta's
                change data feed and Spark's ``CHANGES`` return them (not
                with ``fold_updates``).
            options: The :class:`sluice.ChangeOptions`, by keyword:
                ``ref`` (the branch or tag whose lineage the window runs
                on; None: the main branch; an unknown ref raises
                :class:`sluice.NotFound`) and ``lineage`` (True adds each
                row's id to the images as their last field ``_row_id``, on
                a table that keeps row lineage: Iceberg format v3, Delta
                row tracking).

        Returns:
            A ``pyarrow.RecordBatchReader``. A failure mid-stream raises a
            :class:`SluiceError` from the reader; the reader never ends
            early without one. Read it to the end, or drop it, to release
            the stream (``RecordBatchReader.close()`` does not reach the
            stream; :meth:`Client.close` does).

        Raises:
            TypeError: An argument of the wrong type.
            SluiceError: The request was refused or could not be planned.
        """
        info = self.flight_info(table, from_snapshot, to_snapshot, columns, filter, identity, fold_updates,
                                net_changes, from_timestamp_ms, to_timestamp_ms, compression, layout, **options)
        batches = (data for data, _ in self._chunks(info) if data is not None)
        return pa.RecordBatchReader.from_batches(info.schema, batches)

    def changes_table(
        self,
        table: str,
        from_snapshot: Optional[int] = None,
        to_snapshot: Optional[int] = None,
        columns: Optional[Sequence[str]] = None,
        filter: Optional[str] = None,
        identity: Optional[Sequence[str]] = None,
        fold_updates: bool = False,
        net_changes: bool = False,
        from_timestamp_ms: Optional[int] = None,
        to_timestamp_ms: Optional[int] = None,
        compression: Optional[str] = None,
        layout: Optional[str] = None,
        **options: "Unpack[ChangeOptions]",
    ) -> pa.Table:
        """Read a whole change window into a ``pyarrow.Table``.

        ``changes(...).read_all()``; arguments are those of
        :meth:`changes`. Use :meth:`changes` or :meth:`batches` for windows
        that do not fit in memory. For a DataFrame, use
        :func:`sluice.to_pandas` on the result: the table's own
        ``to_pandas()`` turns int64 ids under a null image into floats.
        """
        reader = self.changes(table, from_snapshot, to_snapshot, columns, filter, identity, fold_updates,
                              net_changes, from_timestamp_ms, to_timestamp_ms, compression, layout, **options)
        with translated():
            return reader.read_all()

    def schema(
        self,
        table: str,
        columns: Optional[Sequence[str]] = None,
        *,
        from_snapshot: Optional[int] = None,
        to_snapshot: Optional[int] = None,
        filter: Optional[str] = None,
        identity: Optional[Sequence[str]] = None,
        fold_updates: bool = False,
        net_changes: bool = False,
        from_timestamp_ms: Optional[int] = None,
        to_timestamp_ms: Optional[int] = None,
        layout: Optional[str] = None,
        **options: "Unpack[ChangeOptions]",
    ) -> pa.Schema:
        """Return the output schema of a change request without reading data
        (GetSchema).

        The images follow the schema of the window's end snapshot, projected
        onto ``columns``. Arguments are those of :meth:`changes`.
        """
        req = change_request(table, from_snapshot, to_snapshot, columns, filter, identity, fold_updates,
                             net_changes, from_timestamp_ms, to_timestamp_ms, layout=layout, **options)
        descriptor = flight.FlightDescriptor.for_command(encode(req))
        result = self._wire.call(lambda options: self._wire.flight.get_schema(descriptor, options=options))
        # A SchemaResult (pyarrow-stubs say a Schema).
        schema: pa.Schema = result.schema  # type: ignore[attr-defined]
        return schema

    # -- control ----------------------------------------------------------

    def commit_seq(self, table: str, ref: Optional[str] = None) -> Dict[str, Any]:
        """Return the table's commit position, cheap to poll for new commits
        (with ``ref``: the head of that branch or tag, and ``"ref"``).

        Returns:
            ``{"table", "commit_seq", "snapshot", "timestamp_ms"}``:
            ``commit_seq`` grows by at least one with every commit to the
            table's main branch; ``snapshot`` is the current snapshot id
            (None for a table without snapshots).
        """
        return self._action("commit_seq", _ref_body(table, ref))

    def snapshots(self, table: str, ref: Optional[str] = None) -> List[Dict[str, Any]]:
        """Return the lineage of the table's main branch (or of the branch
        or tag ``ref``), oldest first.

        Returns:
            One dict per snapshot: ``snapshot``, ``parent`` (absent for the
            first), ``sequence_number``, ``commit_seq``, ``timestamp_ms``,
            ``operation``, ``summary``, ``schema_id``.
        """
        result = self._action("list_snapshots", _ref_body(table, ref))
        return list(result.get("snapshots") or [])

    def list_tables(self) -> List[Dict[str, Any]]:
        """Return the tables the caller may read.

        Returns:
            One dict per table: ``name``, ``format``, ``format_version``,
            ``current_snapshot``, ``commit_seq``.
        """
        result = self._action("list_tables", {})
        return list(result.get("tables") or [])

    def explain(
        self,
        table: str,
        from_snapshot: Optional[int] = None,
        to_snapshot: Optional[int] = None,
        columns: Optional[Sequence[str]] = None,
        filter: Optional[str] = None,
        identity: Optional[Sequence[str]] = None,
        fold_updates: bool = False,
        net_changes: bool = False,
        from_timestamp_ms: Optional[int] = None,
        to_timestamp_ms: Optional[int] = None,
        compression: Optional[str] = None,
        layout: Optional[str] = None,
        **options: "Unpack[ChangeOptions]",
    ) -> Dict[str, Any]:
        """Plan a change window without reading data and return the plan.

        Arguments are those of :meth:`changes`.

        Returns:
            ``{"table", "from_snapshot", "to_snapshot", "columns",
            "identity", "snapshots": [...], "files_read", "files_skipped",
            "bytes_read", "records_read"}``; each snapshot entry has its
            ``strategy`` and the ``files`` it reads.
        """
        req = change_request(table, from_snapshot, to_snapshot, columns, filter, identity, fold_updates,
                             net_changes, from_timestamp_ms, to_timestamp_ms, compression, layout, **options)
        return self._action("explain", req)

    # -- following --------------------------------------------------------

    def subscribe(
        self,
        table: str,
        consumer: Optional[str] = None,
        start: Optional[str] = None,
        *,
        columns: Optional[Sequence[str]] = None,
        filter: Optional[str] = None,
        identity: Optional[Sequence[str]] = None,
        fold_updates: bool = False,
        from_snapshot: Optional[int] = None,
        from_timestamp_ms: Optional[int] = None,
        follow: bool = True,
        heartbeats: bool = False,
        reconnect: bool = False,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        compression: Optional[str] = None,
        layout: Optional[str] = None,
        protect: bool = False,
        **options: "Unpack[StreamOptions]",
    ) -> Subscription:
        """Follow a table's change feed: an iterator of :class:`FollowBatch`.

        The stream starts where ``start`` says (unless ``from_snapshot`` /
        ``from_timestamp_ms`` are given, or the consumer has acknowledged
        progress, which win in that order), streams every change up to the
        current snapshot, then each new commit as it lands. Call
        :meth:`FollowBatch.ack` on a batch whose ``snapshot_complete`` is
        true, once its changes are processed: a later subscription with the
        same ``consumer`` resumes right after it (at-least-once: changes after
        the last ack are delivered again).

        Args:
            table: ``"namespace.table"``.
            consumer: Durable consumer id whose progress is resumed and
                acknowledged; None: no server-side progress.
            start: ``"latest-full"`` (default: the current state as inserts,
                then changes), ``"latest"`` (only changes after the current
                snapshot), ``"from-snapshot"``, ``"from-snapshot-full"``
                (with ``from_snapshot``), ``"from-timestamp"`` (with
                ``from_timestamp_ms``: changes from the first snapshot
                committed at or after it).
            columns, filter, identity, fold_updates, compression, layout: As in
                :meth:`changes`.
            from_snapshot, from_timestamp_ms: An explicit start.
            follow: False ends the stream once it has caught up.
            heartbeats: Also yield the 0-row heartbeat batches an idle
                stream sends (``batch.heartbeat`` is true).
            reconnect: Open the stream again when it fails with
                ``UNAVAILABLE`` (the server restarted or shut down; after a
                backoff from 0.2 s doubling up to ``max_backoff`` seconds) or
                ends because the table's schema changed (at once; later
                batches carry the new schema), resuming where it stood (see
                :class:`Subscription`).
            max_backoff: The longest wait between reconnects, in seconds.
                Default :data:`sluice.DEFAULT_MAX_BACKOFF` (30, as the Go
                client's and the server's own ``--max-backoff``).
            protect: Acks of the subscription's batches ask the server to
                keep the acknowledged snapshot from the table's expiry (see
                :meth:`ack`).
            options: The :class:`sluice.StreamOptions`, by keyword: ``ref``
                (the branch whose lineage the stream follows; None: the
                main branch; a tag only with ``follow=False``; a
                ``consumer``'s progress is kept on it, apart from the same
                id's on other refs, and its acks name it), ``lineage`` (as
                in :meth:`changes`) and ``on_gap`` (what the stream does
                when the snapshot it would go on from has expired: it always
                starts with a 0-row batch whose :attr:`FollowBatch.resync`
                is true; then ``"resync"`` streams the full state at the
                current snapshot and goes on, and None ends the stream with
                :class:`FailedPrecondition`).

        Raises:
            TypeError, InvalidArgument: bad arguments, before anything is
                sent.
            SluiceError: when the stream cannot start, and while iterating.
        """
        req = stream_request(table, consumer, start, follow, from_snapshot, from_timestamp_ms, columns, filter,
                             identity, fold_updates, compression, layout, **options)
        if not isinstance(protect, bool):
            raise TypeError(f"protect must be a bool, not {type(protect).__name__}")
        if not isinstance(max_backoff, (int, float)) or isinstance(max_backoff, bool) or max_backoff <= 0:
            raise TypeError("max_backoff must be a positive number of seconds")
        return Subscription(self, self._wire, req, heartbeats=heartbeats, reconnect=reconnect,
                            max_backoff=float(max_backoff), protect=protect)

    def ack(self, consumer: str, table: str, snapshot: int, *, protect: bool = False,
            ref: Optional[str] = None) -> Dict[str, Any]:
        """Record, durably, that ``consumer`` has processed every change of
        ``table`` up to and including ``snapshot`` (a snapshot on the
        lineage of the table's main branch, or of the branch or tag
        ``ref`` the consumer follows). Returns the consumer's progress.

        With ``protect``, the server keeps the snapshot from the table's
        expiry until the next ack (a server started with
        ``--protect-consumers``; FailedPrecondition on another): an Iceberg
        tag ``sluice-consumer-<consumer>`` (``...#<ref>`` on a ref), a
        Paimon consumer file, a Delta table's lag watched against its
        retention. An ack without it drops the protection, as does
        :meth:`reset_consumer`."""
        if not isinstance(protect, bool):
            raise TypeError(f"protect must be a bool, not {type(protect).__name__}")
        body = _consumer_body(consumer, table, ref)
        body["snapshot"] = _snapshot_id(snapshot)
        if protect:
            body["protect"] = True
        return self._action("ack", body)

    def consumer_progress(self, consumer: str, table: str, *, ref: Optional[str] = None) -> Dict[str, Any]:
        """Return a consumer's progress on a table (on the branch or tag
        ``ref`` it follows; None: the main branch): ``snapshot``,
        ``commit_seq``, ``timestamp_ms``, ``acked_at_ms``, ``lag_commits``,
        ``lag_ms`` (on its ref), ``expired`` and ``ref`` when not the main
        branch (raises NotFound without progress)."""
        return self._action("consumer_progress", _consumer_body(consumer, table, ref))

    def list_consumers(self, table: str) -> List[Dict[str, Any]]:
        """Return the progress of every consumer of a table, on every ref
        (each with its ``ref``, absent for the main branch), with its lag on
        its ref."""
        return list(self._action("list_consumers", {"table": _table(table)}).get("consumers") or [])

    def reset_consumer(self, consumer: str, table: str, *, ref: Optional[str] = None) -> bool:
        """Forget a consumer's progress on a table (on the branch or tag
        ``ref``; the same id's on other refs stays); return whether it had
        any."""
        return bool(self._action("reset_consumer", _consumer_body(consumer, table, ref))["removed"])

    def watch_commits(self, table: str, ref: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """Yield the table's commit position (``{"table", "commit_seq",
        "snapshot", "timestamp_ms"}``; with ``ref``, of that branch's or
        tag's head, and ``"ref"``): the current one, then one per new commit,
        as it lands. The iterator blocks between commits; it ends only with
        an error (an unknown or dropped ref: NotFound), or when the client
        is closed."""
        body = encode(_ref_body(table, ref))
        wire = self._wire

        def start(options: flight.FlightCallOptions) -> Tuple[Iterator[flight.Result], Optional[flight.Result]]:
            # The first result (the current position) comes at once: a
            # refused token is known by then.
            results = iter(wire.flight.do_action(flight.Action("watch_commits", body), options=options))
            return results, next(results, None)

        results, first = wire.call(start, unary=False)
        if first is None:
            return
        yield json.loads(first.body.to_pybytes())
        with translated():
            for r in results:
                if wire.closed:
                    return
                yield json.loads(r.body.to_pybytes())

    # -- lifetime ---------------------------------------------------------

    def close(self) -> None:
        """Cancel the open streams and close the connection. Idempotent."""
        self._wire.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._wire.closed

    def __enter__(self) -> "Client":
        """Return the client; :meth:`close` it on exit."""
        return self

    def __exit__(self, *exc: Any) -> None:
        """Close the client."""
        self.close()

    def __repr__(self) -> str:
        """Describe the client."""
        state = "closed" if self._wire.closed else "open"
        return f"<sluice.Client {self._uri or '?'} {state}>"


def _snapshot_id(snapshot: Any) -> int:
    if isinstance(snapshot, bool) or not isinstance(snapshot, int):
        raise TypeError(f"snapshot must be an int, not {type(snapshot).__name__}")
    return snapshot


def _ref_body(table: Any, ref: Any) -> Dict[str, Any]:
    """The body of commit_seq, list_snapshots and watch_commits: the table,
    and its ref when one is named."""
    body: Dict[str, Any] = {"table": _table(table)}
    if ref is not None:
        if not isinstance(ref, str):
            raise TypeError(f"ref must be a str (a branch or tag name), not {type(ref).__name__}")
        if ref:
            body["ref"] = ref
    return body


def _consumer_body(consumer: Any, table: Any, ref: Any) -> Dict[str, Any]:
    """The body of the calls about a consumer: its id, the table, and the
    ref it follows when one is named."""
    return {"consumer": consumer, **_ref_body(table, ref)}


def _table(table: Any) -> str:
    if not isinstance(table, str):
        raise TypeError(f"table must be a str, not {type(table).__name__}")
    if not table.strip():
        raise InvalidArgument("table is required")
    return table


def connect(
    uri: str = DEFAULT_URI,
    token: Optional[str] = None,
    *,
    user: Optional[str] = None,
    password: Optional[str] = None,
    headers: Optional[Headers] = None,
    timeout: Optional[float] = None,
    **kwargs: Any,
) -> Client:
    """Connect to a Sluice server.

    Args:
        uri: ``grpc://host:port`` (``grpc+tls://`` for TLS) or
            ``host:port``. Default: ``grpc://127.0.0.1:8815``.
        token: Bearer token, sent as ``authorization: Bearer <token>`` on
            every call.
        user, password: Basic credentials, for a server with
            ``--auth-mode basic`` (not with ``token``). ``connect`` runs the
            Flight basic-auth Handshake (wrong credentials raise
            :class:`sluice.Unauthenticated`, an unreachable server
            :class:`sluice.Unavailable`), and every call sends the bearer
            token it returns. A call whose token the server refuses (it
            expired, or the server restarted without
            ``--auth-secret-file``) runs the Handshake again and is made
            once more, so a long-running client keeps working. The password
            crosses the network on every Handshake: use TLS beyond a
            trusted network.
        headers: Extra headers sent on every call.
        timeout: Timeout in seconds of each planning and control call
            (streams are not bounded by it).
        **kwargs: Passed to ``pyarrow.flight.FlightClient``:
            ``tls_root_certs``, ``cert_chain``, ``private_key``,
            ``override_hostname``, ``disable_server_verification``,
            ``generic_options``, ...

    Returns:
        A :class:`Client`. Without basic credentials the connection is made
        lazily: an unreachable server is reported (as
        :class:`sluice.Unavailable`) by the first call.
    """
    uri = normalize_uri(uri)
    # Validate the options before opening a channel.
    basic_credentials(user, password, token, header_list(token, headers))
    try:
        fc = flight.FlightClient(uri, **kwargs)
    except PYARROW_ERRORS as exc:
        # A local failure (a URI pyarrow cannot parse, an unknown scheme,
        # bad TLS material): the request of the caller is at fault.
        raise InvalidArgument(f"cannot connect to {uri}: {from_exception(exc).message}") from exc
    try:
        return Client(fc, token=token, headers=headers, timeout=timeout,
                      uri=uri, connect_kwargs=kwargs, user=user, password=password)
    except BaseException:
        fc.close()
        raise
