"""Reading one change window in parallel, one endpoint per worker.

The engines' readers (:mod:`sluice.spark`, :mod:`sluice.ray`) and any
other pool of workers share these steps:

1. On the driver, :func:`plan` asks the server for the window split into
   endpoints (``GetFlightInfo`` with ``max_endpoints``) and returns its
   schema and one :class:`Part` per endpoint: the ticket and the
   locations of the replicas that serve it, picklable.
2. On a worker, :func:`read_part` streams a part's ticket from its first
   location and, when that replica fails, from the next one, resuming
   after the rows it already delivered: a part's rows are the same, in the
   same order, on every replica (the ticket pins the window and its part).

The parts' rows, concatenated in part order, are the rows of one
``DoGet`` of the whole window.

A :class:`Connection` carries what a worker needs to connect (the URI, a
token or basic credentials, TLS material as bytes): it is built on the
driver and pickled to the workers, so a worker needs no file of its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pyarrow as pa
import pyarrow.flight as flight

from ._wire import REUSE_CONNECTION, basic_credentials, header_list
from .client import Client, connect, normalize_uri
from .errors import (
    Cancelled,
    DeadlineExceeded,
    Internal,
    InvalidArgument,
    ResourceExhausted,
    SluiceError,
    Unavailable,
)

__all__ = ["Connection", "Part", "Plan", "plan", "read_part", "FAILOVER_ERRORS"]

#: The errors of one location after which a part is read from the next:
#: the replica is gone, broke the stream, or is out of capacity. Every
#: other error (a bad request, a missing table or snapshot, credentials) is
#: the same on every replica and raised at once.
FAILOVER_ERRORS = (Unavailable, Internal, Cancelled, DeadlineExceeded, ResourceExhausted)


@dataclass(frozen=True)
class Connection:
    """How to reach a Sluice server, picklable (what a worker connects
    with).

    Attributes:
        uri: The server that plans the window (``grpc://host:port``,
            ``grpc+tls://host:port`` or ``host:port``).
        token: A bearer token, or None.
        user, password: Basic credentials (``--auth-mode basic``), or None.
        headers: Extra headers sent on every call.
        tls_root_certs: PEM certificate authorities to trust (bytes).
        cert_chain, private_key: A client certificate and its key (PEM
            bytes), for a server that asks for one.
        override_hostname: The name to verify the server's certificate
            against, when it is not the URI's host.
        disable_server_verification: Do not verify the server's
            certificate (testing only).
        timeout: Seconds that bound each planning and control call.
    """

    uri: str
    token: Optional[str] = None
    user: Optional[str] = None
    password: Optional[str] = field(default=None, repr=False)
    headers: Tuple[Tuple[str, str], ...] = ()
    tls_root_certs: Optional[bytes] = field(default=None, repr=False)
    cert_chain: Optional[bytes] = field(default=None, repr=False)
    private_key: Optional[bytes] = field(default=None, repr=False)
    override_hostname: Optional[str] = None
    disable_server_verification: bool = False
    timeout: Optional[float] = None

    def __post_init__(self) -> None:
        """Check the URI (a ``host:port`` becomes ``grpc://host:port``)
        and the credentials, as :func:`sluice.connect` does."""
        object.__setattr__(self, "uri", normalize_uri(self.uri))
        basic_credentials(self.user, self.password, self.token, header_list(self.token, self.headers))
        if (self.cert_chain is None) != (self.private_key is None):
            raise InvalidArgument("give a client certificate and its private key together")

    def connect(self, location: Optional[str] = None) -> Client:
        """Connect to ``location`` (a replica's URI) or, without one, to
        :attr:`uri`, with these credentials and TLS settings."""
        kwargs: Dict[str, Any] = {}
        if self.tls_root_certs is not None:
            kwargs["tls_root_certs"] = self.tls_root_certs
        if self.cert_chain is not None:
            kwargs["cert_chain"] = self.cert_chain
            kwargs["private_key"] = self.private_key
        if self.override_hostname:
            kwargs["override_hostname"] = self.override_hostname
        if self.disable_server_verification:
            kwargs["disable_server_verification"] = True
        return connect(location or self.uri, self.token, user=self.user, password=self.password,
                       headers=list(self.headers) or None, timeout=self.timeout, **kwargs)


@dataclass(frozen=True)
class Part:
    """One endpoint of a planned window: what a worker reads.

    Attributes:
        index: The endpoint's position in the window: the parts' rows in
            index order are the window's rows.
        ticket: The endpoint's ticket (it pins the window and the part).
        locations: The replicas that serve the ticket, in the order to try
            them; empty: the server that planned the window.
    """

    index: int
    ticket: bytes
    locations: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """A planned window: its output schema and its parts.

    Attributes:
        schema: The Arrow schema of every part's batches.
        parts: One :class:`Part` per endpoint, in order.
        total_records: The window's row count when the server knows it in
            advance, else -1.
        metadata: The FlightInfo's ``app_metadata`` (the pinned window:
            ``from_snapshot``, ``to_snapshot``, ``endpoints``, ...).
    """

    schema: pa.Schema
    parts: Tuple[Part, ...]
    total_records: int = -1
    metadata: Dict[str, Any] = field(default_factory=dict)


def _location_uri(loc: flight.Location) -> str:
    u = loc.uri
    return u.decode() if isinstance(u, bytes) else str(u)


def plan(conn: Connection, table: str, *, max_endpoints: Optional[int] = None, **request: Any) -> Plan:
    """Plan a window on ``conn``'s server, split into at most
    ``max_endpoints`` parts.

    ``request`` holds the arguments of :meth:`sluice.Client.changes`
    (``from_snapshot``, ``to_snapshot``, ``columns``, ``filter``,
    ``identity``, ``layout``, ...). The window is pinned here: a later
    commit does not reach any part. A server of one replica (no
    ``--advertise``) returns one part, whatever ``max_endpoints`` says.

    Raises:
        TypeError, SluiceError: as :meth:`sluice.Client.flight_info`.
    """
    with conn.connect() as client:
        info = client.flight_info(table, max_endpoints=max_endpoints, **request)
    parts = []
    for i, ep in enumerate(info.endpoints):
        locs = tuple(_location_uri(loc) for loc in ep.locations if _location_uri(loc) != REUSE_CONNECTION)
        parts.append(Part(i, ep.ticket.ticket, locs))
    meta: Dict[str, Any] = {}
    if info.app_metadata:
        try:
            decoded = json.loads(info.app_metadata)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            meta = decoded
    return Plan(info.schema, tuple(parts), info.total_records, meta)


def read_part(conn: Connection, part: Part, schema: Optional[pa.Schema] = None) -> Iterator[pa.RecordBatch]:
    """Stream a part's rows, falling over from one location to the next.

    The part is read from its first location (``conn.uri`` when it has
    none). When that read fails with one of :data:`FAILOVER_ERRORS` (the
    replica died, restarted, or is out of capacity), it is read again from
    the next location, and the rows already yielded are skipped: every
    replica streams a ticket's rows in the same order. Once every location
    failed, the last error is raised, as :class:`sluice.Unavailable`
    naming each location's failure. Empty batches (a snapshot's
    checkpoint, a heartbeat) are not yielded.

    Args:
        conn: The credentials and TLS settings to connect with.
        part: The part, from :func:`plan`.
        schema: The plan's schema; a stream in another raises
            :class:`sluice.Internal`.

    Raises:
        SluiceError: a request error at once; a failure of every location.
    """
    locations: List[Optional[str]] = list(part.locations) or [None]
    delivered = 0
    failures: List[str] = []
    last: Optional[SluiceError] = None
    for loc in locations:
        skip = delivered
        try:
            with conn.connect(loc) as client:
                for b in client.read_ticket(part.ticket, schema):
                    batch = b.batch
                    if skip:
                        if batch.num_rows <= skip:
                            skip -= batch.num_rows
                            continue
                        batch = batch.slice(skip)
                        skip = 0
                    if batch.num_rows == 0:
                        continue
                    delivered += batch.num_rows
                    yield batch
            if skip:
                raise Internal(f"part {part.index}: {loc or conn.uri} streamed fewer rows than the "
                               f"{delivered} an earlier location delivered")
            return
        except FAILOVER_ERRORS as exc:
            last = exc
            failures.append(f"{loc or conn.uri}: {exc.code}: {exc.message}")
    raise Unavailable(f"part {part.index}: every location failed ({'; '.join(failures)})") from last

