#!/usr/bin/env python3
"""Writes the Paimon table with a tag and a branch of testdata/paimon.

warehouse/refs.db/branched is an append table written by pypaimon's batch
writer: two commits to main, a tag v2 at the second, a branch b1 created
from the tag (pypaimon copies the tagged snapshot into the branch), two
commits to the branch (the table "refs.branched$branch_b1"), and one more
to main. expected/refs/branched/ records main as every fixture does (see
expected.py), and expected/refs/branched/branch-b1/ the branch's snapshots
the same way, as pypaimon reads them on the branch.

Usage: pypaimon_refs.py OUT_DIR   (OUT_DIR gets warehouse/ and expected/)
"""

import os
import sys

import pyarrow as pa
from pypaimon import CatalogFactory, Schema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from expected import Recorder  # noqa: E402

DB = "refs"
NAME = "branched"
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def write(table, ids):
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    c = wb.new_commit()
    try:
        w.write_arrow(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=SCHEMA))
        c.commit(w.prepare_commit())
    finally:
        w.close()
        c.close()


def main():
    out = sys.argv[1]
    warehouse = os.path.join(out, "warehouse")
    expected = os.path.join(out, "expected", DB)
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database(DB, True)
    ident = f"{DB}.{NAME}"
    catalog.create_table(ident, Schema.from_pyarrow_schema(SCHEMA, options={"bucket": "-1",
                                                                              "file.format": "parquet"}), False)
    rec = Recorder(expected, NAME, "pypaimon")
    write(catalog.get_table(ident), [1, 2, 3, 4])
    write(catalog.get_table(ident), [5, 6])
    rec.snapshot(catalog.get_table(ident))
    catalog.create_tag(ident, "v2", 2)
    catalog.create_branch(ident, "b1", "v2")
    branch = Recorder(os.path.join(expected, NAME), "branch-b1", "pypaimon")
    branch.done = 1  # the branch starts with the tagged snapshot 2, copied
    write(catalog.get_table(ident + "$branch_b1"), [10, 11])
    write(catalog.get_table(ident + "$branch_b1"), [12])
    branch.snapshot(catalog.get_table(ident + "$branch_b1"))
    write(catalog.get_table(ident), [7])
    rec.snapshot(catalog.get_table(ident))
    # The branch's recorder writes into the main one's folder: main's first.
    rec.finish(catalog.get_table(ident))
    branch.finish(catalog.get_table(ident + "$branch_b1"))


if __name__ == "__main__":
    main()
