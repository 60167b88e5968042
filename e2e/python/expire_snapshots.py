"""Expires a table's old snapshots with pyiceberg through a REST catalog,
then removes the files no retained snapshot references (orphan files),
as a maintenance job would: the e2e test of consumer protection
(e2e/protect_test.go).

    expire_snapshots.py --table ns.name --before SNAPSHOT_ID --out OUT.json

Every snapshot committed before SNAPSHOT_ID is expired, except those a
branch or tag holds (pyiceberg's ExpireSnapshots.older_than skips them).
Then every object under the table's location that is neither a metadata
JSON file nor referenced by a retained snapshot (its manifest list,
manifests, data and delete files) is deleted from S3. The catalog and S3
come from the environment as for s3_writer.py. OUT.json gets the expired
snapshot ids, the retained ones, the refs and the deleted objects.
"""

import argparse
import json
import os
from datetime import datetime, timezone
from urllib.parse import urlparse

import boto3

from s3_writer import catalog


def referenced(tbl):
    """The URLs every retained snapshot reads."""
    out = set()
    for snap in tbl.metadata.snapshots:
        out.add(snap.manifest_list)
        for m in snap.manifests(tbl.io):
            out.add(m.manifest_path)
            for e in m.fetch_manifest_entry(tbl.io, discard_deleted=False):
                out.add(e.data_file.file_path)
    return out


def remove_orphans(tbl):
    loc = urlparse(tbl.metadata.location)
    s3 = boto3.client("s3", endpoint_url=os.environ["SLUICE_S3_ENDPOINT"], region_name="us-east-1")
    keep = {urlparse(u).path.lstrip("/") for u in referenced(tbl)}
    prefix = loc.path.lstrip("/").rstrip("/") + "/"
    removed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=loc.netloc, Prefix=prefix):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            if key.endswith(".metadata.json") or key in keep:
                continue
            s3.delete_object(Bucket=loc.netloc, Key=key)
            removed.append(key)
    return removed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", required=True)
    ap.add_argument("--before", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    cat = catalog()
    tbl = cat.load_table(args.table)
    before = tbl.snapshot_by_id(args.before)
    ids = {s.snapshot_id for s in tbl.metadata.snapshots}
    when = datetime.fromtimestamp(before.timestamp_ms / 1000, tz=timezone.utc)
    tbl.maintenance.expire_snapshots().older_than(when).commit()
    tbl = cat.load_table(args.table)
    retained = {s.snapshot_id for s in tbl.metadata.snapshots}
    removed = remove_orphans(tbl)
    with open(args.out, "w") as f:
        json.dump({
            "expired": sorted(ids - retained),
            "retained": sorted(retained),
            "refs": {name: ref.snapshot_id for name, ref in tbl.metadata.refs.items()},
            "removed": removed,
        }, f)


if __name__ == "__main__":
    main()
