"""The sluice Python client (clients/python) against a real flightd."""

import pyarrow as pa
import pytest

import sluice


@pytest.fixture
def client(addr):
    with sluice.connect(addr) as c:
        yield c


def test_changes_reader(client, fixture):
    snaps = fixture["snapshots"]
    reader = client.changes(fixture["table"], columns=["id", "qty"])
    assert isinstance(reader, pa.RecordBatchReader)
    table = reader.read_all()
    assert [r["id"] for r in table.column("after").to_pylist()] == [r["id"] for s in snaps for r in s["rows"]]
    assert [f.name for f in table.schema.field("after").type] == ["id", "qty"]


def test_window_and_checkpoints(client, fixture):
    snaps = fixture["snapshots"]
    batches = list(client.batches(fixture["table"], from_snapshot=snaps[1]["snapshot"], to_snapshot=snaps[3]["snapshot"]))
    complete = [(b.snapshot, b.commit_seq) for b in batches if b.snapshot_complete]
    assert complete == [(s["snapshot"], s["commit_seq"]) for s in snaps[2:4]]
    assert sum(b.num_rows for b in batches) == sum(len(s["rows"]) for s in snaps[2:4])


def test_control_calls(client, fixture):
    snaps = fixture["snapshots"]
    cs = client.commit_seq(fixture["table"])
    assert cs["commit_seq"] == snaps[-1]["commit_seq"] and cs["snapshot"] == snaps[-1]["snapshot"]
    assert [s["snapshot"] for s in client.snapshots(fixture["table"])] == [s["snapshot"] for s in snaps]
    assert fixture["table"] in [t["name"] for t in client.list_tables()]
    plan = client.explain(fixture["table"], filter="qty > 0")
    assert len(plan["snapshots"]) == len(snaps)
    schema = client.schema(fixture["table"], columns=["name"])
    assert [f.name for f in schema.field("after").type] == ["name"]


@pytest.mark.parametrize(
    "kwargs, error, code, text",
    [
        ({"table": "e2e.nope"}, sluice.NotFound, "NOT_FOUND", "e2e.nope"),
        ({"table": "e2e.events", "columns": ["nope"]}, sluice.InvalidArgument, "INVALID_ARGUMENT", "nope"),
        ({"table": "e2e.events", "filter": "qty >"}, sluice.InvalidArgument, "INVALID_ARGUMENT", "position"),
        ({"table": "e2e.events", "from_snapshot": 99}, sluice.NotFound, "NOT_FOUND", "99"),
    ],
)
def test_errors_carry_codes(client, kwargs, error, code, text):
    table = kwargs.pop("table")
    with pytest.raises(error) as err:
        client.changes(table, **kwargs).read_all()
    assert text in err.value.message
    assert err.value.code == code


def test_not_an_ancestor(client, fixture):
    snaps = fixture["snapshots"]
    with pytest.raises(sluice.InvalidArgument, match="not an ancestor"):
        client.changes(fixture["table"], from_snapshot=snaps[-1]["snapshot"], to_snapshot=snaps[0]["snapshot"])
