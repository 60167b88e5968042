"""The client against an in-process stand-in server (no Sluice server)."""

import gc

import pyarrow as pa
import pytest

import sluice
from sluice.client import normalize_uri

from conftest import SCHEMA


def test_normalize_uri():
    assert normalize_uri("127.0.0.1:8815") == "grpc://127.0.0.1:8815"
    assert normalize_uri(" localhost:1 ") == "grpc://localhost:1"
    assert normalize_uri("grpc+tls://h:443") == "grpc+tls://h:443"
    with pytest.raises(sluice.InvalidArgument):
        normalize_uri("")
    with pytest.raises(TypeError):
        normalize_uri(8815)


def test_connect_validates_its_options():
    with pytest.raises(sluice.InvalidArgument):
        sluice.connect("127.0.0.1:1", token="")
    with pytest.raises(TypeError):
        sluice.connect("127.0.0.1:1", token=b"x")
    with pytest.raises(TypeError):
        sluice.connect("127.0.0.1:1", timeout=-1)
    with pytest.raises(sluice.InvalidArgument):
        sluice.connect("127.0.0.1:1", token="t", headers={"Authorization": "Basic x"})
    with pytest.raises(sluice.InvalidArgument, match="cannot connect"):
        sluice.connect("grpc://bad uri")


def test_changes_chains_every_endpoint_in_order(client, server):
    reader = client.changes("a.b", from_snapshot=10, columns=["id", "name"])
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.equals(SCHEMA)
    table = reader.read_all()
    assert table.column("after").combine_chunks().field("id").to_pylist() == [1, 2, 3, 4, 5]
    assert server.commands[0] == {"table": "a.b", "from_snapshot": "10", "columns": ["id", "name"]}


def test_changes_table(client):
    t = client.changes_table("a.b")
    assert t.num_rows == 5
    assert t.schema.equals(SCHEMA)


def test_batches_carry_their_metadata(client):
    got = [(b.num_rows, b.snapshot, b.commit_seq, b.snapshot_complete, b.metadata["rows"])
           for b in client.batches("a.b")]
    assert got == [(2, 1, 1, False, 2), (1, 1, 1, True, 1), (0, 2, 2, False, 0), (2, 2, 2, True, 2)]
    first = next(client.batches("a.b"))
    assert first.timestamp_ms == 1_700_000_000_001
    assert first.batch.schema.equals(SCHEMA)


def test_planning_errors_raise_at_call_time(client):
    # Not at the first next(): the window is planned eagerly.
    with pytest.raises(sluice.NotFound):
        client.batches("error.notfound")


def test_a_failure_mid_stream_raises_from_the_reader(client):
    reader = client.changes("fail.midstream")
    with pytest.raises(sluice.Unavailable) as info:
        reader.read_all()
    assert info.value.message == "storage went away"


def test_a_failure_mid_stream_raises_from_iteration(client):
    seen = []
    with pytest.raises(sluice.Unavailable):
        for batch in client.changes("fail.midstream"):
            seen.append(batch.num_rows)
    assert seen == [2, 1, 1]
    seen = []
    with pytest.raises(sluice.Unavailable):
        for b in client.batches("fail.midstream"):
            seen.append(b.num_rows)
    assert seen == [2, 1, 1]


def test_a_failure_mid_stream_raises_from_read_pandas(client):
    pytest.importorskip("pandas")
    with pytest.raises(sluice.Unavailable):
        client.changes("fail.midstream").read_pandas()


def test_malformed_metadata_is_an_error(client):
    with pytest.raises(sluice.Internal, match="not JSON"):
        list(client.batches("bad.metadata"))


def test_an_endpoint_with_another_schema_is_an_error(client):
    with pytest.raises(sluice.Internal, match="schema"):
        client.changes("other.schema").read_all()


def test_token_and_headers_are_sent_on_every_call(server):
    with sluice.connect(f"grpc://127.0.0.1:{server.port}", token="s3cret", headers={"X-Trace": "t1"}) as c:
        c.changes_table("a.b")
        c.schema("a.b")
        c.commit_seq("a.b")
    methods = set()
    for call in server.headers.calls:
        assert call["headers"].get("authorization") == ["Bearer s3cret"], call
        assert call["headers"].get("x-trace") == ["t1"], call
        methods.add(str(call["method"]))
    assert {"FlightMethod.GET_FLIGHT_INFO", "FlightMethod.DO_GET", "FlightMethod.GET_SCHEMA",
            "FlightMethod.DO_ACTION"} <= methods


def test_no_token_sends_no_authorization(server):
    with sluice.connect(f"127.0.0.1:{server.port}") as c:
        c.list_tables()
    assert all("authorization" not in call["headers"] for call in server.headers.calls)


def test_schema(client, server):
    s = client.schema("a.b", ["id"], to_snapshot=5)
    assert s.equals(SCHEMA)
    assert server.commands[-1] == {"table": "a.b", "to_snapshot": "5", "columns": ["id"]}


def test_commit_seq(client, server):
    assert client.commit_seq("a.b") == {"table": "a.b", "commit_seq": 7, "snapshot": 1 << 62,
                                        "timestamp_ms": 1_700_000_000_000}
    assert server.actions[-1] == ("commit_seq", {"table": "a.b"})


def test_snapshots(client, server):
    snaps = client.snapshots("a.b")
    assert [s["snapshot"] for s in snaps] == [1, 2]
    assert snaps[1]["parent"] == 1
    assert server.actions[-1] == ("list_snapshots", {"table": "a.b"})


def test_list_tables(client, server):
    assert client.list_tables() == [{"name": "a.b", "format": "iceberg", "format_version": 2,
                                     "current_snapshot": 5, "commit_seq": 3}]
    assert server.actions[-1] == ("list_tables", {})


def test_explain_sends_the_change_request(client, server):
    plan = client.explain("a.b", from_snapshot=1, to_snapshot=2, filter="id > 1", net_changes=True)
    want = {"table": "a.b", "from_snapshot": "1", "to_snapshot": "2", "filter": "id > 1", "net_changes": True}
    assert plan["request"] == want
    assert server.actions[-1] == ("explain", want)


def test_actions_validate_the_table_locally(client, server):
    with pytest.raises(sluice.InvalidArgument):
        client.commit_seq("")
    with pytest.raises(TypeError):
        client.snapshots(None)
    assert server.actions == []


def test_an_action_with_two_results_is_an_error(client):
    with pytest.raises(sluice.Internal, match="2 results"):
        client._action("two_results", {})


def test_validation_happens_before_any_call(client, server):
    with pytest.raises(sluice.InvalidArgument):
        client.changes("a.b", from_snapshot=1, from_timestamp_ms=1)
    with pytest.raises(TypeError):
        client.changes("a.b", columns="id")
    assert server.commands == []


def test_a_closed_client_refuses_calls(server):
    c = sluice.connect(f"127.0.0.1:{server.port}")
    with c:
        assert not c.closed
    assert c.closed
    c.close()  # idempotent
    with pytest.raises(sluice.FailedPrecondition, match="closed"):
        c.list_tables()
    with pytest.raises(sluice.FailedPrecondition):
        c.changes("a.b")


def test_closing_the_client_ends_open_streams_with_an_error(server):
    c = sluice.connect(f"127.0.0.1:{server.port}")
    it = c.batches("a.b")
    next(it)
    c.close()
    with pytest.raises(sluice.SluiceError):
        list(it)


def test_dropping_a_reader_releases_its_stream(client):
    reader = client.changes("a.b")
    reader.read_next_batch()
    assert len(client._wire._streams) == 1
    del reader
    gc.collect()
    assert len(client._wire._streams) == 0


def test_unreachable_server_is_unavailable():
    with sluice.connect("127.0.0.1:1", timeout=5) as c:
        with pytest.raises(sluice.Unavailable):
            c.list_tables()
