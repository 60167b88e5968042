"""The write path of clients/python/examples/falkordb_sink.py against an
embedded FalkorDB (falkordblite), without flightd: a batch applied twice
leaves the graph as applying it once, a full state removes the edges it
does not mention, and the indexes are rebuilt whole after a restart of the
server. e2e/falkordb_test.go runs the whole worker against flightd."""

import importlib.util
import os
from pathlib import Path

import pyarrow as pa
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "clients" / "python" / "examples" / "falkordb_sink.py"
IMAGE = pa.struct([("id", pa.int64()), ("src", pa.int64()), ("dst", pa.int64()), ("weight", pa.float64())])


@pytest.fixture(scope="module")
def sink():
    spec = importlib.util.spec_from_file_location("falkordb_sink", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def edge(i, w=1.0):
    return {"id": i, "src": i // 100, "dst": i % 100, "weight": w}


def batch(*rows):
    """Change rows (op, before, after) of the row layout."""
    return pa.RecordBatch.from_arrays(
        [pa.array([r[0] for r in rows]), pa.array([r[1] for r in rows], IMAGE), pa.array([r[2] for r in rows], IMAGE)],
        names=["op", "before", "after"])


def edges(sink, g):
    return sink.graph_edges(g)


def nodes(g):
    return sorted(r[0] for r in g.ro_query("MATCH (n:Node) RETURN n.id").result_set)


def test_batches_apply_idempotently_and_full_states_sweep(sink, tmp_path):
    db = str(tmp_path / "graph.db")
    g = sink.open_graph(db, None)
    sink.build_indexes(g)
    first = batch(("insert", None, edge(102)), ("insert", None, edge(203, 2.0)), ("insert", None, edge(304)))
    for _ in range(2):  # at-least-once: the same batch again
        sink.apply(g, first, 1)
        assert edges(sink, g) == {102: (1, 2, 1.0), 203: (2, 3, 2.0), 304: (3, 4, 1.0)}
        assert nodes(g) == [1, 2, 3, 4]
    # An update that moves an edge, and a delete: node 4 goes with its edge.
    second = batch(("update", edge(203, 2.0), {"id": 203, "src": 5, "dst": 6, "weight": 3.0}),
                   ("delete", edge(304), None))
    for _ in range(2):
        sink.apply(g, second, 2)
        assert edges(sink, g) == {102: (1, 2, 1.0), 203: (5, 6, 3.0)}
        assert nodes(g) == [1, 2, 5, 6]
    # A full state at snapshot 9 that no longer has 102: the sweep at its
    # end removes it, and its nodes.
    sink.apply(g, batch(("insert", None, {"id": 203, "src": 5, "dst": 6, "weight": 3.0}),
                        ("insert", None, edge(708))), 9)
    g.query(sink.DROP_UNSYNCED, {"snapshot": 9})
    g.query(sink.DROP_ALL_ORPHANS)
    assert edges(sink, g) == {203: (5, 6, 3.0), 708: (7, 8, 1.0)}
    assert nodes(g) == [5, 6, 7, 8]


def test_indexes_are_whole_after_a_restart(sink, tmp_path):
    from redislite.falkordb_client import FalkorDB

    db = str(tmp_path / "graph.db")
    server = FalkorDB(db)
    g = server.select_graph(sink.GRAPH)
    sink.build_indexes(g)
    ids = [s * 100 + d for s in range(12) for d in range(12) if s != d]
    sink.apply(g, batch(*[("insert", None, edge(i)) for i in ids]), 1)
    # Delete and insert again some, then restart the server from its file.
    sink.apply(g, batch(*[("delete", edge(i), None) for i in ids[:20]]), 2)
    sink.apply(g, batch(*[("insert", None, edge(i, 2.0)) for i in ids[:10]]), 3)
    pid = server.client.pid
    server.close()  # shuts the server down, saving to the file
    assert not os.path.exists(f"/proc/{pid}"), "the embedded server still runs"
    g = FalkorDB(db).select_graph(sink.GRAPH)
    assert g.client.pid != pid
    sink.build_indexes(g)
    live = ids[:10] + ids[20:]
    missing = [i for i in live
               if not g.ro_query("MATCH ()-[e:LINK {id: $id}]->() RETURN e.id", {"id": i}).result_set]
    assert missing == []
    assert [n for n in range(12)
            if not g.ro_query("MATCH (n:Node {id: $id}) RETURN n.id", {"id": n}).result_set] == []
