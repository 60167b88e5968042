"""sluice.engine_options: the string options of the Spark reader."""

from __future__ import annotations

import pytest

import sluice
from sluice.engine_options import DEFAULT_MAX_ENDPOINTS, read_options


def test_defaults_and_request():
    o = read_options({"uri": "127.0.0.1:8815", "table": "demo.orders"})
    assert o.connection.uri == "grpc://127.0.0.1:8815" and o.table == "demo.orders"
    assert o.request == {"layout": "flat"} and o.flat and o.max_endpoints == DEFAULT_MAX_ENDPOINTS
    o = read_options({"URI": "grpc://h:1", "Table": "a.b", "From_Snapshot": "12", "to_timestamp": "2026-11-30T08:15:00Z",
                      "columns": "id, name", "identity": "id", "filter": "id > 1", "net_changes": "true",
                      "layout": "row", "compression": "zstd", "max_endpoints": "4"})
    assert o.request == {"from_snapshot": 12, "to_timestamp_ms": 1796026500000, "columns": ["id", "name"],
                         "filter": "id > 1", "identity": ["id"], "net_changes": True, "compression": "zstd"}
    assert not o.flat
    assert o.max_endpoints == 1  # a net window is not split
    # A time without a zone is UTC.
    o = read_options({"uri": "h:1", "table": "a.b", "from_timestamp": "2026-11-30T08:15:00"})
    assert o.request["from_timestamp_ms"] == 1796026500000
    # .load("a.b") passes the table as path.
    assert read_options({"uri": "h:1", "path": "a.b"}).table == "a.b"


def test_ref_and_lineage_reach_the_request():
    o = read_options({"uri": "h:1", "table": "a.b", "ref": "audit", "lineage": "true"})
    assert o.request["ref"] == "audit" and o.request["lineage"] is True
    assert "lineage" not in read_options({"uri": "h:1", "table": "a.b", "lineage": "false"}).request


@pytest.mark.parametrize("options, message", [
    ({"table": "a.b"}, "option uri is required"),
    ({"uri": "h:1"}, "option table is required"),
    ({"uri": "h:1", "table": "a.b", "colums": "x"}, "unknown option colums"),
    ({"uri": "h:1", "table": "a.b", "from_snapshot": "x"}, "from_snapshot 'x': want an integer"),
    ({"uri": "h:1", "table": "a.b", "max_endpoints": "0"}, "max_endpoints 0: want 1 or more"),
    ({"uri": "h:1", "table": "a.b", "layout": "wide"}, "layout 'wide': want flat or row"),
    ({"uri": "h:1", "table": "a.b", "net_changes": "maybe"}, "net_changes 'maybe': want true or false"),
    ({"uri": "h:1", "table": "a.b", "columns": "a,,b"}, "empty column name"),
    ({"uri": "h:1", "table": "a.b", "from_timestamp": "yesterday"}, "want an ISO 8601 time"),
    ({"uri": "h:1", "table": "a.b", "from_timestamp": "2026-01-01", "from_timestamp_ms": "1"}, "not both"),
    ({"uri": "h:1", "table": "a.b", "from_snapshot": "1", "from_timestamp_ms": "1"}, "not both"),
    ({"uri": "h:1", "table": "a.b", "compression": "gzip"}, "compression 'gzip'"),
    ({"uri": "h:1", "table": "a.b", "ref": " audit"}, "without surrounding spaces"),
    ({"uri": "h:1", "table": "a.b", "lineage": "maybe"}, "lineage 'maybe': want true or false"),
    ({"uri": "h:1", "table": "a.b", "timeout": "-1"}, "positive number of seconds"),
    ({"uri": "h:1", "table": "a.b", "tls_ca": "/nonexistent/ca.pem"}, "cannot read /nonexistent/ca.pem"),
    ({"uri": "h:1", "table": "a.b", "tls_cert": __file__}, "together"),
    ({"uri": "h:1", "table": "a.b", "token": "t", "user": "u", "password": "p"}, "not both"),
])
def test_bad_options(options, message):
    with pytest.raises(sluice.InvalidArgument, match=message):
        read_options(options)


def test_files_are_read_on_the_driver(tmp_path):
    ca, cert, key, token = (tmp_path / n for n in ("ca.pem", "cert.pem", "key.pem", "token"))
    ca.write_bytes(b"CA")
    cert.write_bytes(b"CERT")
    key.write_bytes(b"KEY")
    token.write_text("s3cret\n")
    o = read_options({"uri": "grpc+tls://h:1", "table": "a.b", "tls_ca": str(ca), "tls_cert": str(cert),
                      "tls_key": str(key), "token_file": str(token), "tls_server_name": "sluice.local",
                      "insecure_skip_verify": "false", "timeout": "2.5"})
    c = o.connection
    assert (c.tls_root_certs, c.cert_chain, c.private_key, c.token) == (b"CA", b"CERT", b"KEY", "s3cret")
    assert c.override_hostname == "sluice.local" and not c.disable_server_verification and c.timeout == 2.5
    with pytest.raises(sluice.InvalidArgument, match="token or token_file"):
        read_options({"uri": "h:1", "table": "a.b", "token": "x", "token_file": str(token)})


def test_extra_options_are_kept_for_the_caller():
    o = read_options({"uri": "h:1", "table": "a.b", "maxSnapshotsPerTrigger": "3"}, extra=("maxSnapshotsPerTrigger",))
    assert o.extra == {"maxsnapshotspertrigger": "3"}
