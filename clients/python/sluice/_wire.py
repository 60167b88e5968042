"""The wire under :class:`sluice.Client` and its subscriptions (private).

One :class:`Wire` is one Flight connection: its credentials and call
options, the streams it has open, the clients of other endpoint locations,
and the retry of a call whose token the server refused. It also decodes a
batch's ``app_metadata``. ``client.py`` and ``subscription.py`` both speak
to it, and neither to the other's internals.
"""

from __future__ import annotations

import json
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar, Union

import pyarrow as pa
import pyarrow.flight as flight

from .errors import FailedPrecondition, Internal, InvalidArgument, Unauthenticated, translated
from .request import encode

Headers = Union[Mapping[str, str], Iterable[Tuple[str, str]]]

# The location that means "the server you asked" (Flight 15+).
REUSE_CONNECTION = "arrow-flight-reuse-connection://?"

T = TypeVar("T")


def header_list(token: Optional[str], headers: Optional[Headers]) -> List[Tuple[bytes, bytes]]:
    """Validate a token and extra headers and return them as the header
    list of a call."""
    out: List[Tuple[bytes, bytes]] = []
    items = headers.items() if isinstance(headers, Mapping) else (headers or ())
    for k, v in items:
        if not isinstance(k, str) or not isinstance(v, str):
            raise TypeError("headers must map str names to str values")
        out.append((k.lower().encode("ascii"), v.encode("utf-8")))
    if token is not None:
        if not isinstance(token, str):
            raise TypeError(f"token must be a str, not {type(token).__name__}")
        if not token.strip():
            raise InvalidArgument("token is empty: pass None to send no credentials")
        if any(k == b"authorization" for k, _ in out):
            raise InvalidArgument("give token or an authorization header, not both")
        out.append((b"authorization", b"Bearer " + token.encode("utf-8")))
    return out


def basic_credentials(user: Optional[str], password: Optional[str], token: Optional[str],
                      headers: List[Tuple[bytes, bytes]]) -> Optional[Tuple[str, str]]:
    """Validate the basic-auth credentials of a connection: both or
    neither, and not with a token or an authorization header."""
    if user is None and password is None:
        return None
    if not isinstance(user, str) or not isinstance(password, str):
        raise TypeError("user and password must both be given, as str")
    if not user.strip():
        raise InvalidArgument("user is empty")
    if token is not None or any(k == b"authorization" for k, _ in headers):
        raise InvalidArgument("give user and password, or a token, not both")
    return user, password


def parse_metadata(buf: Optional[pa.Buffer]) -> Dict[str, Any]:
    """Parse a batch's ``app_metadata`` JSON object ({} when absent)."""
    if buf is None or buf.size == 0:
        return {}
    raw = buf.to_pybytes()
    try:
        meta = json.loads(raw)
    except ValueError as exc:
        raise Internal(f"a batch's app_metadata is not JSON: {raw[:200]!r}") from exc
    if not isinstance(meta, dict):
        raise Internal(f"a batch's app_metadata is not a JSON object: {raw[:200]!r}")
    return meta


class Wire:
    """One Flight connection with its credentials, open streams and the
    clients of other endpoint locations.

    With basic credentials (``user``, ``password``), :meth:`authenticate`
    runs the Flight basic-auth Handshake and every call sends the bearer
    token it returns; a call the server refuses as ``UNAUTHENTICATED`` (a
    token that expired, or that a restarted server no longer knows) runs
    the Handshake again and is made once more. A second refusal is raised.
    """

    def __init__(self, flight_client: flight.FlightClient, headers: List[Tuple[bytes, bytes]], *,
                 basic: Optional[Tuple[str, str]] = None, timeout: Optional[float] = None,
                 connect_kwargs: Optional[Mapping[str, Any]] = None) -> None:
        self.flight = flight_client
        self._headers = headers
        self._basic = basic
        self._timeout = timeout
        self._connect_kwargs = dict(connect_kwargs or {})
        # _lock guards _closed, _streams, _others and _bearer; _auth_lock
        # serializes Handshakes (taken before _lock, never inside it).
        self._lock = threading.Lock()
        self._auth_lock = threading.Lock()
        self._closed = False
        self._streams: "weakref.WeakSet[flight.FlightStreamReader]" = weakref.WeakSet()
        self._others: Dict[str, flight.FlightClient] = {}
        self._bearer: Optional[Tuple[bytes, bytes]] = None

    # -- credentials and options -------------------------------------------

    def call_options(self, unary: bool = True) -> flight.FlightCallOptions:
        """The FlightCallOptions of a call: the headers (the bearer token of
        the last Handshake among them), and for a unary call the
        timeout."""
        with self._lock:
            headers = self._headers + ([self._bearer] if self._bearer is not None else [])
        return flight.FlightCallOptions(
            # pyarrow takes bytes as well as str (pyarrow-stubs say only str).
            headers=headers or None,  # type: ignore[arg-type]
            timeout=self._timeout if unary else None,
        )

    def authenticate(self) -> None:
        """Run the basic-auth Handshake and keep the bearer token it
        returns (no-op without basic credentials)."""
        with self._auth_lock:
            self._handshake()

    def _handshake(self) -> None:
        if self._basic is None:
            return
        user, password = self._basic
        options = flight.FlightCallOptions(headers=self._headers or None,  # type: ignore[arg-type]
                                           timeout=self._timeout)
        with translated():
            key, value = self.flight.authenticate_basic_token(user, password, options=options)
        k = key if isinstance(key, bytes) else str(key).encode("ascii")
        v = value if isinstance(value, bytes) else str(value).encode("utf-8")
        if k.lower() != b"authorization" or not v.startswith(b"Bearer "):
            raise Internal("the server answered the basic-auth Handshake without a bearer token "
                           "(is its --auth-mode basic?)")
        with self._lock:
            self._bearer = (b"authorization", v)

    def _renew(self, refused: Optional[Tuple[bytes, bytes]]) -> None:
        """Handshake again, unless another call already replaced the
        refused token."""
        with self._auth_lock:
            with self._lock:
                current = self._bearer
            if current == refused:
                self._handshake()

    def call(self, fn: Callable[[flight.FlightCallOptions], T], *, unary: bool = True) -> T:
        """Return ``fn(options)``, pyarrow's errors raised as SluiceErrors.

        With basic credentials, a call refused as ``UNAUTHENTICATED``
        handshakes again and runs once more; its second refusal is raised.
        ``fn`` must do nothing that cannot be done twice before the server
        accepts the call (open a stream and read its schema, say; not read
        its batches).
        """
        self.check_open()
        with self._lock:
            sent = self._bearer
        try:
            with translated():
                return fn(self.call_options(unary))
        except Unauthenticated:
            if self._basic is None:
                raise
        self._renew(sent)
        self.check_open()
        with translated():
            return fn(self.call_options(unary))

    # -- calls --------------------------------------------------------------

    def action(self, name: str, body: Dict[str, Any]) -> Dict[str, Any]:
        """Run a JSON action and return its one JSON object result."""

        def run(options: flight.FlightCallOptions) -> List[bytes]:
            return [r.body.to_pybytes() for r in self.flight.do_action(flight.Action(name, encode(body)),
                                                                      options=options)]

        results = self.call(run)
        if len(results) != 1:
            raise Internal(f"action {name!r} returned {len(results)} results, want 1")
        try:
            result = json.loads(results[0])
        except ValueError as exc:
            raise Internal(f"action {name!r} returned a result that is not JSON: {results[0][:200]!r}") from exc
        if not isinstance(result, dict):
            raise Internal(f"action {name!r} returned a result that is not a JSON object: {results[0][:200]!r}")
        return result

    def open_stream(self, ticket: flight.Ticket, client: Optional[flight.FlightClient] = None,
                    ) -> flight.FlightStreamReader:
        """Open a DoGet stream, wait for its schema, and track it (see
        :meth:`untrack`): :meth:`close` cancels it. A refused token is
        renewed as in :meth:`call`."""
        fc = client or self.flight

        def run(options: flight.FlightCallOptions) -> flight.FlightStreamReader:
            stream = fc.do_get(ticket, options=options)
            stream.schema  # noqa: B018 - the first message: a refusal comes with it
            return stream

        stream = self.call(run, unary=False)
        with self._lock:
            if not self._closed:
                self._streams.add(stream)
                return stream
        stream.cancel()
        raise FailedPrecondition("the client is closed")

    def untrack(self, stream: flight.FlightStreamReader) -> None:
        """Forget a stream that ended."""
        with self._lock:
            self._streams.discard(stream)

    def client_for(self, endpoint: flight.FlightEndpoint) -> flight.FlightClient:
        """Return the Flight client that serves an endpoint's ticket."""
        locations = [loc.uri.decode() if isinstance(loc.uri, bytes) else str(loc.uri)
                     for loc in endpoint.locations]
        if not locations or REUSE_CONNECTION in locations:
            return self.flight
        uri = locations[0]
        with self._lock:
            self._check_open_locked()
            c = self._others.get(uri)
            if c is None:
                with translated():
                    c = flight.FlightClient(uri, **self._connect_kwargs)
                self._others[uri] = c
            return c

    # -- lifetime -----------------------------------------------------------

    def check_open(self) -> None:
        """Raise FailedPrecondition once the connection is closed."""
        with self._lock:
            self._check_open_locked()

    def _check_open_locked(self) -> None:
        if self._closed:
            raise FailedPrecondition("the client is closed")

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Cancel the open streams and close the connections. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            streams = list(self._streams)
            others = list(self._others.values())
            self._others.clear()
        for s in streams:
            try:
                s.cancel()
            except Exception:  # noqa: BLE001 - best effort
                pass
        for c in [*others, self.flight]:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - best effort
                pass
