"""A follower with basic credentials for e2e/reconnect_test.go.

It follows TABLE as the durable consumer CONSUMER, logged in as USER with
the password in SLUICE_PASSWORD, with reconnect: it prints one JSON line
per batch (``{"snapshot", "ids"}``: the ids of its after-images), and once
it has acknowledged a complete snapshot, ``{"acked": snapshot}``. It runs
until it is killed.

Usage: basic_follower.py URI TABLE CONSUMER USER
"""

import json
import os
import sys

import sluice


def main(uri: str, table: str, consumer: str, user: str) -> None:
    with sluice.connect(uri, user=user, password=os.environ["SLUICE_PASSWORD"]) as client:
        sub = client.subscribe(table, consumer=consumer, start="latest-full", columns=["id"], reconnect=True,
                               max_backoff=0.3)
        for b in sub:
            ids = [a["id"] for a in b.batch.column("after").to_pylist() if a is not None]
            print(json.dumps({"snapshot": b.snapshot, "ids": ids}), flush=True)
            if b.snapshot_complete and b.snapshot is not None:
                b.ack()
                print(json.dumps({"acked": b.snapshot}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
