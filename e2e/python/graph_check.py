"""Reads the FalkorDB graph that clients/python/examples/falkordb_sink.py
keeps, with Cypher, for e2e/falkordb_test.go.

    graph_check.py DB_FILE TABLE IDS_JSON

IDS_JSON is a JSON list of edge ids to look up (present and deleted ones).
Prints one JSON object: the edge and node counts, the graph's sync state
(SluiceSync), the distinct node ids, and for each id the edge as
[src, dst, weight] (null when no edge has the id; a list of them when
several do, which the test fails on).
"""

import json
import os
import sys

from redislite.falkordb_client import FalkorDB


def main() -> None:
    db_file, table, ids_file = sys.argv[1:4]
    with open(ids_file) as f:
        ids = json.load(f)
    # The same file the sink used: its server, or a new one on its data.
    g = FalkorDB(os.path.abspath(db_file)).select_graph("edges")
    edges = g.ro_query("MATCH ()-[e:LINK]->() RETURN count(e)").result_set[0][0]
    nodes = g.ro_query("MATCH (n:Node) RETURN count(n)").result_set[0][0]
    node_ids = sorted(r[0] for r in g.ro_query("MATCH (n:Node) RETURN n.id").result_set)
    sync = g.ro_query("MATCH (s:SluiceSync {table: $t}) RETURN s.snapshot, s.commit_seq", {"t": table}).result_set
    spot = {}
    for i in ids:
        # toInteger(e.id): a scan of the edges themselves, not the index
        # (which the sink builds, and FalkorDB reloads from disk here).
        rows = g.ro_query("MATCH (a:Node)-[e:LINK]->(b:Node) WHERE toInteger(e.id) = $id "
                          "RETURN a.id, b.id, e.weight", {"id": i}).result_set
        spot[str(i)] = None if not rows else rows[0] if len(rows) == 1 else rows
    print(json.dumps({"edges": edges, "nodes": nodes, "node_ids": node_ids,
                      "sync": sync[0] if sync else None, "spot": spot}))


if __name__ == "__main__":
    main()
