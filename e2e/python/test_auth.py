"""Authentication and authorization through the real pyarrow Flight client
and the Sluice client.

Run by e2e/auth_test.go (TestAuth), which starts flightd in each mode and
passes SLUICE_AUTH_FIXTURE: a JSON file with the servers' URIs ("token":
token and basic auth, plaintext; "short": basic auth with tokens issued
for 4s; "tls": tokens over TLS; "mtls": client certificates), the tokens
of the principals analyst (reads e2e.*), restricted (columns id and qty of
e2e.events) and hr (reads hr.*), a token of no one ("wrong"), the basic
user and password, and the PEM files of the CA and client certificates.
"""

import json
import os
import time

import pyarrow as pa
import pyarrow.flight as flight
import pytest

import sluice
from conftest import read_chunks, request

pytestmark = pytest.mark.skipif(not os.environ.get("SLUICE_AUTH_FIXTURE"),
                                reason="run by e2e/auth_test.go (TestAuth), which starts the servers")


@pytest.fixture(scope="module")
def af():
    with open(os.environ["SLUICE_AUTH_FIXTURE"]) as f:
        return json.load(f)


def pem(path):
    with open(path, "rb") as f:
        return f.read()


def bearer(token):
    return flight.FlightCallOptions(headers=[(b"authorization", b"Bearer " + token.encode())])


@pytest.fixture
def connect():
    clients = []

    def make(uri, **kwargs):
        c = flight.connect(uri, **kwargs)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def read(client, af, options=None, **fields):
    """Reads a request with do_get (the ticket is the request) to its end."""
    fields.setdefault("table", af["table"])
    reader = client.do_get(flight.Ticket(request(**fields)), options=options)
    return reader.read_all()


def list_tables(client, options=None):
    results = list(client.do_action(flight.Action("list_tables", b"{}"), options=options))
    return [t["name"] for t in json.loads(results[0].body.to_pybytes())["tables"]]


# -- bearer tokens ---------------------------------------------------------


def test_no_credentials(af, connect):
    c = connect(af["uris"]["token"])
    with pytest.raises(flight.FlightUnauthenticatedError, match="no credentials"):
        read(c, af)
    with pytest.raises(flight.FlightUnauthenticatedError, match="no credentials"):
        c.get_flight_info(flight.FlightDescriptor.for_command(request(table=af["table"])))
    with pytest.raises(flight.FlightUnauthenticatedError):
        list_tables(c)
    with pytest.raises(flight.FlightUnauthenticatedError):
        list(c.list_flights())
    with sluice.connect(af["uris"]["token"]) as sc:
        with pytest.raises(sluice.Unauthenticated) as err:
            sc.commit_seq(af["table"])
        assert err.value.code == "UNAUTHENTICATED"
        with pytest.raises(sluice.Unauthenticated):
            sc.changes_table(af["table"])


def test_wrong_token(af, connect):
    c = connect(af["uris"]["token"])
    wrong = af["tokens"]["wrong"]
    with pytest.raises(flight.FlightUnauthenticatedError, match="unknown bearer token") as err:
        read(c, af, bearer(wrong))
    assert wrong not in str(err.value)
    with pytest.raises(flight.FlightUnauthenticatedError):
        list_tables(c, flight.FlightCallOptions(headers=[(b"authorization", b"Token " + wrong.encode())]))
    with sluice.connect(af["uris"]["token"], token=wrong) as sc:
        with pytest.raises(sluice.Unauthenticated) as err:
            sc.list_tables()
        assert err.value.code == "UNAUTHENTICATED"


def test_right_token(af, connect):
    c = connect(af["uris"]["token"])
    opts = bearer(af["tokens"]["analyst"])
    table = read(c, af, opts)
    assert table.num_rows == af["rows"]
    # GetFlightInfo, then its ticket: DoGet checks the caller again.
    info = c.get_flight_info(flight.FlightDescriptor.for_command(request(table=af["table"])), options=opts)
    got, metas = read_chunks_with(c, info.endpoints[0].ticket.ticket, opts)
    assert got.num_rows == af["rows"] and metas[-1]["snapshot_complete"]
    with pytest.raises(flight.FlightUnauthenticatedError):
        c.do_get(info.endpoints[0].ticket).read_all()
    assert list_tables(c, opts) == [af["table"]]
    assert [fi.descriptor.command for fi in c.list_flights(options=opts)] == [
        json.dumps({"table": af["table"]}, separators=(",", ":")).encode()]
    with sluice.connect(af["uris"]["token"], token=af["tokens"]["analyst"]) as sc:
        assert sc.changes_table(af["table"]).num_rows == af["rows"]
        assert [t["name"] for t in sc.list_tables()] == [af["table"]]


def read_chunks_with(client, ticket, options):
    reader = client.do_get(flight.Ticket(ticket), options=options)
    batches, metas = [], []
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            break
        batches.append(chunk.data)
        metas.append(json.loads(chunk.app_metadata.to_pybytes()))
    return pa.Table.from_batches(batches, schema=reader.schema), metas


def test_table_not_granted(af, connect):
    c = connect(af["uris"]["token"])
    opts = bearer(af["tokens"]["analyst"])
    hr = af["hr_table"]
    for call in (
        lambda: read(c, af, opts, table=hr),
        lambda: read(c, af, opts, table=hr, follow=True),
        lambda: c.get_flight_info(flight.FlightDescriptor.for_command(request(table=hr)), options=opts),
        lambda: list(c.do_action(flight.Action("commit_seq", request(table=hr)), options=opts)),
        lambda: list(c.do_action(flight.Action("list_snapshots", request(table=hr)), options=opts)),
        lambda: list(c.do_action(flight.Action("explain", request(table=hr)), options=opts)),
        lambda: list(c.do_action(flight.Action("reset_consumer", request(table=hr, consumer="c1")), options=opts)),
    ):
        with pytest.raises(flight.FlightUnauthorizedError, match='principal "analyst" may not read table "hr.salaries"'):
            call()
    # pyarrow raises a plain OSError from get_schema, whatever the code.
    with pytest.raises(OSError, match='unauthorized error.*principal "analyst" may not read table "hr.salaries"'):
        c.get_schema(flight.FlightDescriptor.for_command(request(table=hr)), options=opts)
    with sluice.connect(af["uris"]["token"], token=af["tokens"]["analyst"]) as sc:
        for call in (lambda: sc.snapshots(hr), lambda: sc.schema(hr), lambda: sc.commit_seq(hr),
                     lambda: sc.changes_table(hr), lambda: sc.explain(hr)):
            with pytest.raises(sluice.PermissionDenied) as err:
                call()
            assert err.value.code == "PERMISSION_DENIED"
    # hr sees its table and nothing else.
    hopts = bearer(af["tokens"]["hr"])
    assert list_tables(c, hopts) == [hr]
    assert read(c, af, hopts, table=hr).num_rows == 2
    with pytest.raises(flight.FlightUnauthorizedError):
        read(c, af, hopts)


def test_column_restricted(af, connect):
    c = connect(af["uris"]["token"])
    opts = bearer(af["tokens"]["restricted"])
    assert list_tables(c, opts) == [af["table"]]
    table = read(c, af, opts)
    assert table.num_rows == af["rows"]
    assert [f.name for f in table.schema.field("after").type] == ["id", "qty"]
    assert read(c, af, opts, columns=["qty"], filter="qty >= -500").num_rows == af["rows"]
    for fields in ({"columns": ["id", "name"]}, {"filter": "name = 'x'"}, {"filter": "qty > 0 OR amount > 1"},
                   {"identity": ["created"]}, {"follow": True, "filter": "flag = TRUE"}):
        with pytest.raises(flight.FlightUnauthorizedError, match="may not read column"):
            read(c, af, opts, **fields)
    with sluice.connect(af["uris"]["token"], token=af["tokens"]["restricted"]) as sc:
        assert [f.name for f in sc.schema(af["table"]).field("after").type] == ["id", "qty"]
        with pytest.raises(sluice.PermissionDenied, match="may not read column"):
            sc.changes(af["table"], filter="amount > 10")


# -- basic auth --------------------------------------------------------------


def test_basic_handshake(af, connect):
    c = connect(af["uris"]["token"])
    header = c.authenticate_basic_token(af["user"], af["password"])
    assert header[0] == b"authorization" and header[1].startswith(b"Bearer ")
    opts = flight.FlightCallOptions(headers=[header])
    assert read(c, af, opts).num_rows == af["rows"]
    assert list_tables(c, opts) == [af["table"]]
    with pytest.raises(flight.FlightUnauthorizedError, match='principal "alice"'):
        read(c, af, opts, table=af["hr_table"])
    # The token works on other connections too, and with the Sluice client.
    token = header[1].decode()[len("Bearer "):]
    with sluice.connect(af["uris"]["token"], token=token) as sc:
        assert sc.changes_table(af["table"]).num_rows == af["rows"]
    with pytest.raises(flight.FlightUnauthenticatedError, match="wrong user name or password"):
        connect(af["uris"]["token"]).authenticate_basic_token(af["user"], "not the password")
    with pytest.raises(flight.FlightUnauthenticatedError, match="wrong user name or password"):
        connect(af["uris"]["token"]).authenticate_basic_token("mallory", af["password"])


def test_expired_token(af, connect):
    c = connect(af["uris"]["short"])
    header = c.authenticate_basic_token(af["user"], af["password"])
    opts = flight.FlightCallOptions(headers=[header])
    assert list_tables(c, opts) == [af["table"]]
    # Issued for 4s, its expiry rounded down to the second.
    deadline = time.monotonic() + 15
    while True:
        try:
            list_tables(c, opts)
        except flight.FlightUnauthenticatedError as e:
            assert "expired" in str(e)
            break
        assert time.monotonic() < deadline, "a token issued for 4s is still accepted after 15s"
        time.sleep(0.1)
    # A new handshake gets a new token.
    assert list_tables(c, flight.FlightCallOptions(headers=[c.authenticate_basic_token(af["user"], af["password"])]))


# -- TLS -------------------------------------------------------------------


def test_tls(af, connect):
    uri = af["uris"]["tls"]
    assert uri.startswith("grpc+tls://")
    c = connect(uri, tls_root_certs=pem(af["ca"]))
    opts = bearer(af["tokens"]["analyst"])
    assert read(c, af, opts).num_rows == af["rows"]
    with pytest.raises(flight.FlightUnauthenticatedError):
        read(c, af)
    with sluice.connect(uri, token=af["tokens"]["analyst"], tls_root_certs=pem(af["ca"])) as sc:
        assert sc.changes_table(af["table"]).num_rows == af["rows"]
    # Without the CA the server's certificate is not trusted.
    with pytest.raises(flight.FlightUnavailableError):
        read(connect(uri), af, opts)


def test_mtls_known_certificate(af, connect):
    uri = af["uris"]["mtls"]
    c = connect(uri, tls_root_certs=pem(af["ca"]), cert_chain=pem(af["client_cert"]),
                private_key=pem(af["client_key"]))
    assert read(c, af).num_rows == af["rows"]
    assert list_tables(c) == [af["table"]]
    with pytest.raises(flight.FlightUnauthorizedError, match='principal "ingest"'):
        read(c, af, table=af["hr_table"])
    with sluice.connect(uri, tls_root_certs=pem(af["ca"]), cert_chain=pem(af["client_cert"]),
                        private_key=pem(af["client_key"])) as sc:
        assert sc.changes_table(af["table"]).num_rows == af["rows"]


def test_mtls_unknown_certificates(af, connect):
    uri = af["uris"]["mtls"]
    # Signed by the CA, but not a known subject.
    stranger = connect(uri, tls_root_certs=pem(af["ca"]), cert_chain=pem(af["stranger"][0]),
                       private_key=pem(af["stranger"][1]))
    with pytest.raises(flight.FlightUnauthenticatedError, match="unknown client certificate"):
        read(stranger, af)
    # Another CA's certificate, and none: the TLS handshake is refused.
    rogue = connect(uri, tls_root_certs=pem(af["ca"]), cert_chain=pem(af["rogue"][0]),
                    private_key=pem(af["rogue"][1]))
    with pytest.raises(flight.FlightUnavailableError):
        read(rogue, af)
    with pytest.raises(flight.FlightUnavailableError):
        read(connect(uri, tls_root_certs=pem(af["ca"])), af)
    with sluice.connect(uri, tls_root_certs=pem(af["ca"]), cert_chain=pem(af["rogue"][0]),
                        private_key=pem(af["rogue"][1])) as sc:
        with pytest.raises(sluice.Unavailable) as err:
            sc.list_tables()
        assert err.value.code == "UNAVAILABLE"
