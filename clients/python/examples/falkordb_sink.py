"""A graph sink: keep a FalkorDB graph of an edges table in sync from Sluice's
change feed.

The edges table has one row per directed edge: ``id`` (its identifier
field), ``src``, ``dst`` and ``weight``. In the graph each row is a
``(:Node {id: src})-[:LINK {id, weight}]->(:Node {id: dst})``; a node lives
as long as an edge touches it. The worker follows the table as a durable
consumer (``--consumer``): on its first start it loads the table's full
state, then applies each commit's changes as they land, and acknowledges a
snapshot once all of its changes are in the graph. A restarted worker
resumes right after the last acknowledged snapshot.

Delivery is at-least-once, so every write is idempotent, keyed by the
edge's ``id``: a batch's changes reduce to the last image of each id
(updates come folded, one row with both images), then one query deletes the
edges of those ids and another MERGEs the nodes and creates the edges that
live on; nodes left without an edge go. Applying a batch twice leaves the
graph as applying it once. A full state (the first start, or a restart
that broke off inside one) also removes the edges it did not mention:
each edge records the snapshot that wrote it (``e.synced``), and at the
full state's end the edges of other snapshots go.

The graph also holds where it stands: ``(:SluiceSync {table})`` with the
``snapshot`` and ``commit_seq`` it reflects, written before each ack.

FalkorDB runs embedded (``--db FILE``: the ``falkordblite`` package starts
a FalkorDB server on that file, which outlives a killed worker and is found
again by the next one) or as a server (``--falkordb redis://host:port``,
with the ``falkordb`` client)::

    python falkordb_sink.py --uri grpc://127.0.0.1:8815 --table graph.edges \\
        --consumer graph-1 --db graph.db

Needs ``pip install falkordb falkordblite`` (or only ``falkordb`` with
``--falkordb``) next to the sluice client.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc

import sluice

GRAPH = "edges"

# Edges are found by id, nodes by id: both indexed.
INDEXES = (
    ("DROP INDEX ON :Node(id)", "CREATE INDEX FOR (n:Node) ON (n.id)"),
    ("DROP INDEX FOR ()-[e:LINK]-() ON (e.id)", "CREATE INDEX FOR ()-[e:LINK]-() ON (e.id)"),
)
DELETE_EDGES = "UNWIND $ids AS id MATCH ()-[e:LINK {id: id}]->() DELETE e"
CREATE_EDGES = """UNWIND $rows AS r
MERGE (a:Node {id: r.src})
MERGE (b:Node {id: r.dst})
CREATE (a)-[:LINK {id: r.id, weight: r.weight, synced: $snapshot}]->(b)"""
DROP_ORPHANS = """UNWIND $ids AS id MATCH (n:Node {id: id})
OPTIONAL MATCH (n)-[e]-() WITH n, count(e) AS degree WHERE degree = 0 DELETE n"""
DROP_UNSYNCED = "MATCH ()-[e:LINK]->() WHERE e.synced <> $snapshot DELETE e"
DROP_ALL_ORPHANS = "MATCH (n:Node) OPTIONAL MATCH (n)-[e]-() WITH n, count(e) AS degree WHERE degree = 0 DELETE n"
SET_SYNC = """MERGE (s:SluiceSync {table: $table})
SET s.snapshot = $snapshot, s.commit_seq = $commit_seq"""
GET_SYNC = "MATCH (s:SluiceSync {table: $table}) RETURN s.snapshot, s.commit_seq"


def open_graph(db: Optional[str], url: Optional[str]) -> Any:
    """Open the graph: embedded on the file ``db`` (falkordblite), or on the
    FalkorDB server at ``url``."""
    if url:
        from falkordb import FalkorDB  # noqa: PLC0415 - only one of the two is needed

        return FalkorDB.from_url(url).select_graph(GRAPH)
    from redislite.falkordb_client import FalkorDB as EmbeddedFalkorDB  # noqa: PLC0415

    # appendfsync always: a write is on disk before the worker acks it, so
    # an ack never runs ahead of the graph, even if the server dies.
    server = EmbeddedFalkorDB(db, serverconfig={"appendonly": "yes", "appendfsync": "always"})
    return server.select_graph(GRAPH)


def build_indexes(g: Any) -> None:
    """Build the indexes afresh. FalkorDB 4.22 (falkordblite 0.11) can miss
    entities in an index it loads back from disk after a restart: a lookup
    by id then finds no edge, and a delete would leave it behind. Built
    anew on the data, they are whole."""
    for drop, create in INDEXES:
        try:
            g.query(drop)
        except Exception as exc:  # noqa: BLE001 - a new graph has no index to drop
            if "unable to drop index" not in str(exc).lower():
                raise
        g.query(create)
    deadline = time.monotonic() + 60
    while any(r[7] != "OPERATIONAL" for r in g.ro_query("CALL db.indexes()").result_set):
        if time.monotonic() > deadline:
            raise RuntimeError("FalkorDB did not build the indexes within a minute")
        time.sleep(0.05)


def last_images(batch: pa.RecordBatch) -> Dict[int, Optional[Dict[str, Any]]]:
    """Reduce a batch of change rows to the last image of each edge id:
    its after-image, or None when the edge is gone."""
    out: Dict[int, Optional[Dict[str, Any]]] = {}
    for row in batch.to_pylist():
        op, before, after = row["op"], row["before"], row["after"]
        if op in ("insert", "update", "update_after"):
            out[after["id"]] = after
        elif op in ("delete", "update_before"):
            out[before["id"]] = None
        else:
            raise ValueError(f"unknown change op {op!r}")
    return out


def touched_nodes(batch: pa.RecordBatch) -> List[int]:
    """The node ids a batch's images name, before and after."""
    nodes: Set[int] = set()
    for name in ("before", "after"):
        col = batch.column(name)
        for f in ("src", "dst"):
            nodes.update(v for v in pc.struct_field(col, f).to_pylist() if v is not None)
    return sorted(nodes)


def apply(g: Any, batch: pa.RecordBatch, snapshot: int) -> None:
    """Apply a batch of change rows to the graph, idempotently."""
    if batch.num_rows == 0:
        return
    images = last_images(batch)
    g.query(DELETE_EDGES, {"ids": sorted(images)})
    rows = [{"id": i, "src": a["src"], "dst": a["dst"], "weight": a["weight"]}
            for i, a in sorted(images.items()) if a is not None]
    if rows:
        g.query(CREATE_EDGES, {"rows": rows, "snapshot": snapshot})
    g.query(DROP_ORPHANS, {"ids": touched_nodes(batch)})


def sync_state(g: Any, table: str) -> Tuple[Optional[int], Optional[int]]:
    """The snapshot and commit_seq the graph reflects (None, None when
    none)."""
    rows = g.ro_query(GET_SYNC, {"table": table}).result_set
    return (rows[0][0], rows[0][1]) if rows else (None, None)


def graph_edges(g: Any) -> Dict[int, Tuple[int, int, Any]]:
    """The graph's edges: id -> (src, dst, weight)."""
    res = g.ro_query("MATCH (a:Node)-[e:LINK]->(b:Node) RETURN e.id, a.id, b.id, e.weight").result_set
    return {r[0]: (r[1], r[2], r[3]) for r in res}


def table_edges(client: sluice.Client, table: str, snapshot: Optional[int]) -> Dict[int, Tuple[int, int, Any]]:
    """The table's edges at a snapshot, read through Sluice (its full
    state)."""
    if snapshot is None:
        return {}
    out: Dict[int, Tuple[int, int, Any]] = {}
    for b in client.subscribe(table, start="from-snapshot-full", from_snapshot=snapshot, follow=False,
                              columns=["id", "src", "dst", "weight"]):
        if b.full_state:
            for a in b.batch.column("after").to_pylist():
                if a is not None:  # a full state's rows are inserts: after is set
                    out[a["id"]] = (a["src"], a["dst"], a["weight"])
    return out


def target(until: Optional[int], until_file: Optional[str]) -> Optional[int]:
    """The commit_seq to stop at: --until-commit-seq, or the number in
    --until-file once it is there."""
    if until is not None or not until_file:
        return until
    try:
        with open(until_file) as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return None


def subscribe(client: sluice.Client, args: argparse.Namespace) -> sluice.Subscription:
    """Open the subscription. ``reconnect=True`` reopens a stream that
    broke off; a worker that starts while flightd is down waits for it the
    same way (0.2 s, doubling up to --max-backoff)."""
    wait = 0.2
    while True:
        try:
            return client.subscribe(args.table, consumer=args.consumer, start="latest-full",
                                    columns=["id", "src", "dst", "weight"], fold_updates=True,
                                    heartbeats=True, reconnect=True, max_backoff=args.max_backoff)
        except sluice.Unavailable as exc:
            print(f"flightd unavailable ({exc.message}): again in {wait:.1f}s", file=sys.stderr, flush=True)
            time.sleep(wait)
            wait = min(wait * 2, args.max_backoff)


def follow(client: sluice.Client, g: Any, args: argparse.Namespace, stats: Dict[str, int]) -> Optional[int]:
    """Follow the table into the graph until the target is reached (or
    forever); return the commit_seq the graph reflects."""
    _, applied = sync_state(g, args.table)
    stop = target(args.until_commit_seq, args.until_file)
    if stop is not None and applied is not None and applied >= stop:
        return applied
    sub = subscribe(client, args)
    with sub:
        for b in sub:
            if not b.heartbeat and b.snapshot is not None:
                stats["batches"] += 1
                stats["redelivered"] += int(b.redelivered)
                apply(g, b.batch, b.snapshot)
                if b.snapshot_complete:
                    if b.full_state:
                        # The table's whole state is in: what it did not
                        # mention is gone from the table.
                        g.query(DROP_UNSYNCED, {"snapshot": b.snapshot})
                        g.query(DROP_ALL_ORPHANS)
                    g.query(SET_SYNC, {"table": args.table, "snapshot": b.snapshot, "commit_seq": b.commit_seq})
                    # With reconnect=True, an ack that finds flightd gone
                    # waits for it (0.2 s, doubling up to --max-backoff).
                    b.ack()
                    applied = b.commit_seq
                    stats["snapshots"] += 1
            stop = target(args.until_commit_seq, args.until_file)
            if stop is not None and applied is not None and applied >= stop:
                break
    return applied


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--uri", default=sluice.DEFAULT_URI)
    p.add_argument("--table", required=True)
    p.add_argument("--consumer", default="falkordb-sink")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--db", help="FalkorDB embedded on this file (falkordblite)")
    where.add_argument("--falkordb", help="a FalkorDB server, redis://host:port")
    p.add_argument("--until-commit-seq", type=int, help="stop once the graph reflects this commit")
    p.add_argument("--until-file", help="stop once the graph reflects the commit_seq written in this file")
    p.add_argument("--max-backoff", type=float, default=sluice.DEFAULT_MAX_BACKOFF,
                   help="longest wait between reconnects to flightd, seconds")
    p.add_argument("--verify", action="store_true", help="at the end, check the graph against the table")
    args = p.parse_args(argv)
    if args.db:
        args.db = os.path.abspath(args.db)

    g = open_graph(args.db, args.falkordb)
    build_indexes(g)
    stats = {"batches": 0, "snapshots": 0, "redelivered": 0}
    with sluice.connect(args.uri) as client:
        applied = follow(client, g, args, stats)
        snapshot, _ = sync_state(g, args.table)
        edges = graph_edges(g)
        nodes = g.ro_query("MATCH (n:Node) RETURN count(n)").result_set[0][0]
        result: Dict[str, Any] = {"commit_seq": applied, "snapshot": snapshot, "nodes": nodes,
                                  "edges": len(edges), **stats}
        ok = True
        if args.verify:
            # The table as of the snapshot the graph reflects, through Sluice.
            want = table_edges(client, args.table, snapshot)
            ok = want == edges and nodes == len({n for s, d, _ in want.values() for n in (s, d)})
            result["verified"] = ok
            if not ok:
                result["missing"] = sorted(set(want) - set(edges))[:10]
                result["extra"] = sorted(set(edges) - set(want))[:10]
        print(json.dumps(result), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
