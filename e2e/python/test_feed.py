"""The wire contract as a plain pyarrow Flight client sees it."""

import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

from conftest import read_chunks, request

COLUMNS = ["id", "name", "amount", "flag", "qty", "created"]
IMAGE = pa.struct(
    [
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("flag", pa.bool_()),
        pa.field("qty", pa.int32()),
        pa.field("created", pa.timestamp("us", tz="UTC")),
    ]
)
SCHEMA = pa.schema(
    [
        pa.field("op", pa.string(), nullable=False),
        pa.field("before", IMAGE),
        pa.field("after", IMAGE),
        pa.field("snapshot", pa.int64()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
    ]
)


def after_rows(table, columns=COLUMNS):
    """The after-images as dicts, timestamps as microseconds."""
    out = []
    for row in table.column("after").to_pylist():
        d = {k: row[k] for k in columns}
        if "created" in d and d["created"] is not None:
            d["created"] = int(d["created"].timestamp() * 1_000_000)
        out.append(d)
    return out


def expected(snapshots, columns=COLUMNS):
    return [{k: r[k] for k in columns} for s in snapshots for r in s["rows"]]


def test_schema_is_the_renderable_row(fclient, fixture):
    info = fclient.get_schema(flight.FlightDescriptor.for_command(request(table=fixture["table"])))
    assert info.schema == SCHEMA
    assert info.schema.metadata is None


def test_every_consecutive_snapshot_pair(fclient, fixture):
    for s in fixture["snapshots"]:
        req = request(
            table=fixture["table"],
            from_snapshot=str(s["parent"]) if s["parent"] is not None else None,
            to_snapshot=str(s["snapshot"]),
        )
        table, metas = read_chunks(fclient, req)
        assert table.schema == SCHEMA
        assert after_rows(table) == expected([s]), f"snapshot {s['snapshot']}"
        assert table.column("op").to_pylist() == ["insert"] * len(s["rows"])
        assert table.column("before").null_count == len(s["rows"])
        assert set(table.column("snapshot").to_pylist()) == {s["snapshot"]}
        ts = pc.cast(table.column("ts"), pa.int64()).to_pylist()
        assert set(ts) == {s["timestamp_ms"] * 1000}
        assert metas[-1] == {
            "snapshot": s["snapshot"],
            "commit_seq": s["commit_seq"],
            "snapshot_complete": True,
            "timestamp_ms": s["timestamp_ms"],
            "rows": metas[-1]["rows"],
        }


def test_whole_history_via_flight_info(fclient, fixture):
    snaps = fixture["snapshots"]
    info = fclient.get_flight_info(flight.FlightDescriptor.for_command(request(table=fixture["table"])))
    assert info.total_records == sum(len(s["rows"]) for s in snaps)
    assert info.schema == SCHEMA
    summary = json.loads(info.app_metadata)
    assert summary["to_snapshot"] == snaps[-1]["snapshot"]
    assert summary["commit_seq"] == snaps[-1]["commit_seq"]
    tables, metas = [], []
    for endpoint in info.endpoints:
        t, m = read_chunks(fclient, endpoint.ticket.ticket)
        tables.append(t)
        metas.extend(m)
    table = pa.concat_tables(tables)
    assert after_rows(table) == expected(snaps)
    # Snapshots in lineage order, each ending with one complete batch.
    complete = [m["snapshot"] for m in metas if m["snapshot_complete"]]
    assert complete == [s["snapshot"] for s in snaps]
    seqs = [m["commit_seq"] for m in metas]
    assert seqs == sorted(seqs)


def test_direct_ticket_equals_planned_ticket(fclient, fixture):
    direct, _ = read_chunks(fclient, request(table=fixture["table"]))
    info = fclient.get_flight_info(flight.FlightDescriptor.for_command(request(table=fixture["table"])))
    planned, _ = read_chunks(fclient, info.endpoints[0].ticket.ticket)
    assert direct.equals(planned)


def test_projection_returns_only_the_asked_columns(fclient, fixture):
    cols = ["qty", "id"]
    table, _ = read_chunks(fclient, request(table=fixture["table"], columns=cols))
    for image in ("before", "after"):
        assert [f.name for f in table.schema.field(image).type] == cols
    assert after_rows(table, cols) == expected(fixture["snapshots"], cols)


def test_filter(fclient, fixture):
    table, _ = read_chunks(fclient, request(table=fixture["table"], columns=["id"], filter="flag = true AND qty > 0"))
    want = [{"id": r["id"]} for s in fixture["snapshots"] for r in s["rows"] if r["flag"] and r["qty"] > 0]
    assert want, "the fixture selects no row"
    assert after_rows(table, ["id"]) == want


def test_compressed_stream(fclient, fixture):
    for codec in ("lz4", "zstd"):
        table, _ = read_chunks(fclient, request(table=fixture["table"], compression=codec))
        assert after_rows(table) == expected(fixture["snapshots"])


def action(client, name, body):
    results = list(client.do_action(flight.Action(name, json.dumps(body).encode())))
    assert len(results) == 1
    return json.loads(results[0].body.to_pybytes())


def test_commit_seq_and_lineage(fclient, fixture):
    snaps = fixture["snapshots"]
    cs = action(fclient, "commit_seq", {"table": fixture["table"]})
    assert cs == {
        "table": fixture["table"],
        "commit_seq": snaps[-1]["commit_seq"],
        "snapshot": snaps[-1]["snapshot"],
        "timestamp_ms": snaps[-1]["timestamp_ms"],
    }
    lineage = action(fclient, "list_snapshots", {"table": fixture["table"]})["snapshots"]
    assert [s["snapshot"] for s in lineage] == [s["snapshot"] for s in snaps]
    assert [s.get("parent") for s in lineage] == [s["parent"] for s in snaps]
    assert [s["commit_seq"] for s in lineage] == [s["commit_seq"] for s in snaps]
    assert all(s["operation"] == "append" for s in lineage)
    tables = action(fclient, "list_tables", {})["tables"]
    assert fixture["table"] in [t["name"] for t in tables]


def test_explain(fclient, fixture):
    snaps = fixture["snapshots"]
    plan = action(
        fclient,
        "explain",
        {"table": fixture["table"], "from_snapshot": str(snaps[1]["snapshot"])},
    )
    assert [s["snapshot"] for s in plan["snapshots"]] == [s["snapshot"] for s in snaps[2:]]
    assert all(s["strategy"] == "append" for s in plan["snapshots"])
    assert plan["records_read"] == sum(len(s["rows"]) for s in snaps[2:])
    assert plan["files_read"] == len(snaps) - 2
