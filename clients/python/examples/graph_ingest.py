"""A graph-ingest worker: keep a networkx graph of an edges table in sync
from Sluice's change feed.

The edges table has one row per directed edge: ``id`` (its identifier
field), ``src``, ``dst`` and ``weight``. The worker follows it as a durable
consumer; on a fresh start it loads the table's full state (start mode
``latest-full``), then applies each commit's changes as they land:

- ``insert``, ``update_after``: add the edge ``src -> dst`` with its
  weight (networkx replaces the attributes of an existing edge);
- ``delete``, ``update_before``: remove the edge when it is there, and its
  nodes once they have no edge left.

Every step is idempotent -- applying a change twice leaves the graph as
applying it once -- so the at-least-once delivery of a crashed worker's
last snapshots is harmless. After each complete snapshot the worker saves
the graph (atomically, with the commit it reflects) and acknowledges the
snapshot, so a restarted worker resumes where it stopped.

With ``--verify`` it reads the table's full state at the end through Sluice
(a bounded ``from-snapshot-full`` read of the current snapshot) and checks
that the graph holds exactly its edges, with their weights.

    python graph_ingest.py --uri grpc://127.0.0.1:8815 --table graph.edges \\
        --consumer graph-1 --state graph.json --verify

Needs ``pip install networkx`` next to the sluice client.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, Optional, Tuple

import networkx as nx

import sluice

Edge = Tuple[int, int]


def load_graph(path: Optional[str]) -> Tuple[nx.DiGraph, Optional[int]]:
    """Load a saved graph and the commit_seq it reflects."""
    if not path or not os.path.exists(path):
        return nx.DiGraph(), None
    with open(path) as f:
        saved = json.load(f)
    g = nx.DiGraph()
    for src, dst, weight in saved["edges"]:
        g.add_edge(src, dst, weight=weight)
    return g, saved["commit_seq"]


def save_graph(path: Optional[str], g: nx.DiGraph, commit_seq: int) -> None:
    """Save the graph atomically."""
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"commit_seq": commit_seq,
                   "edges": sorted([u, v, d["weight"]] for u, v, d in g.edges(data=True))}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def apply(g: nx.DiGraph, batch) -> None:
    """Apply a batch of change rows to the graph, idempotently."""
    for row in batch.to_pylist():
        op = row["op"]
        if op in ("delete", "update_before"):
            before = row["before"]
            u, v = before["src"], before["dst"]
            if g.has_edge(u, v):
                g.remove_edge(u, v)
                for n in (u, v):
                    if g.has_node(n) and g.degree(n) == 0:
                        g.remove_node(n)
        if op in ("insert", "update_after", "update"):
            after = row["after"]
            g.add_edge(after["src"], after["dst"], weight=after["weight"])


def table_edges(client: sluice.Client, table: str) -> Dict[Edge, Any]:
    """The table's edges at its current snapshot, read through Sluice."""
    cur = client.commit_seq(table)["snapshot"]
    if cur is None:
        return {}
    edges: Dict[Edge, Any] = {}
    for b in client.subscribe(table, start="from-snapshot-full", from_snapshot=cur, follow=False,
                              columns=["src", "dst", "weight"]):
        for row in b.batch.to_pylist():
            a = row["after"]
            edges[(a["src"], a["dst"])] = a["weight"]
    return edges


def graph_edges(g: nx.DiGraph) -> Dict[Edge, Any]:
    return {(u, v): d["weight"] for u, v, d in g.edges(data=True)}


def until_reached(until: Optional[int], until_file: Optional[str], applied: Optional[int]) -> bool:
    if until is None and until_file:
        try:
            with open(until_file) as f:
                until = int(f.read().strip())
        except (FileNotFoundError, ValueError):
            return False
    return until is not None and applied is not None and applied >= until


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--uri", default=sluice.DEFAULT_URI)
    p.add_argument("--table", required=True)
    p.add_argument("--consumer", default="graph-ingest")
    p.add_argument("--state", help="file the graph is saved to after each snapshot")
    p.add_argument("--until-commit-seq", type=int, help="stop once the graph reflects this commit")
    p.add_argument("--until-file", help="stop once the graph reflects the commit_seq written in this file")
    p.add_argument("--verify", action="store_true", help="check the graph against the table at the end")
    p.add_argument("--output", help="write the final edges here as JSON")
    args = p.parse_args(argv)

    g, applied = load_graph(args.state)
    with sluice.connect(args.uri) as client:
        stats = {"batches": 0, "snapshots": 0, "redelivered": 0}
        if not until_reached(args.until_commit_seq, args.until_file, applied):
            sub = client.subscribe(args.table, consumer=args.consumer, start="latest-full",
                                   columns=["src", "dst", "weight"], heartbeats=True, reconnect=True)
            with sub:
                for b in sub:
                    if not b.heartbeat:
                        stats["batches"] += 1
                        if applied is not None and b.commit_seq <= applied:
                            stats["redelivered"] += 1
                        apply(g, b.batch)
                        if b.snapshot_complete:
                            applied = max(applied or 0, b.commit_seq)
                            save_graph(args.state, g, applied)
                            b.ack()
                            stats["snapshots"] += 1
                    if until_reached(args.until_commit_seq, args.until_file, applied):
                        break
        result = {"commit_seq": applied, "nodes": g.number_of_nodes(), "edges": g.number_of_edges(), **stats}
        ok = True
        if args.verify:
            # The graph reflects `applied`; compare once the table is there
            # too (a writer may still commit: then compare the state it saw).
            want = table_edges(client, args.table)
            ok = want == graph_edges(g)
            result["verified"] = ok
            if not ok:
                missing = sorted(set(want) - set(graph_edges(g)))[:10]
                extra = sorted(set(graph_edges(g)) - set(want))[:10]
                result["missing"], result["extra"] = missing, extra
        if args.output:
            with open(args.output, "w") as f:
                json.dump(sorted([u, v, w] for (u, v), w in graph_edges(g).items()), f)
        print(json.dumps(result))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
