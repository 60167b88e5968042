"""A durable consumer for the e2e follow tests (e2e/follow_test.go).

It follows a table through the real Sluice client (pyarrow.flight) as the
consumer CONSUMER, applies every change to a mirror of the table keyed by
its identity column ``id``, persists the mirror after each complete snapshot
(atomically, with the commit_seq it reflects), and acknowledges every
ACK_EVERY-th complete snapshot. Applying a change is idempotent (a key is
set or removed), so the snapshots delivered again after a crash -- those
after the last acknowledgement -- leave the mirror as it was.

It may be killed at any point and restarted with the same arguments; it
resumes from its state file and from the server's record of its progress.
It exits 0 once the mirror reflects the commit_seq in TARGET (a file the
test writes when its writer has stopped).

Usage: follow_consumer.py URI TABLE CONSUMER STATE TARGET ACK_EVERY
"""

import json
import os
import sys
import time

import sluice


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return {"mirror": {}, "applied_seq": None, "redelivered_batches": 0, "batches": 0, "runs": [],
                "checks": 0}


def save(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def target(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return None


def apply(mirror, batch):
    for row in batch.to_pylist():
        op = row["op"]
        if op in ("delete", "update_before"):
            mirror.pop(str(row["before"]["id"]), None)
        if op in ("insert", "update_after", "update"):
            after = row["after"]
            mirror[str(after["id"])] = {"grp": after["grp"], "val": after["val"]}


def ack(batch):
    """Acknowledge, retrying while the server restarts: an ack that fails
    only because flightd is down must not end the consumer."""
    deadline = time.monotonic() + 60
    while True:
        try:
            batch.ack()
            return
        except sluice.Unavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def main():
    uri, table, consumer, state_path, target_path, ack_every = sys.argv[1:7]
    ack_every = int(ack_every)
    state = load(state_path)
    client = sluice.connect(uri)
    run = {"pid": os.getpid(), "acked_seq": None, "first_seq": None, "first_full_state": None}
    # Where the server will resume: right after the acknowledged snapshot.
    while True:
        try:
            run["acked_seq"] = client.consumer_progress(consumer, table)["commit_seq"]
            break
        except sluice.NotFound:
            break
        except sluice.Unavailable:
            time.sleep(0.2)
    state["runs"].append(run)
    while True:
        try:
            sub = client.subscribe(table, consumer=consumer, start="latest-full", heartbeats=True, reconnect=True,
                                   max_backoff=0.5)
            break
        except sluice.Unavailable:
            time.sleep(0.2)
    since_ack = 0
    in_full_state = False
    for b in sub:
        if not b.heartbeat:
            if run["first_seq"] is None:
                run["first_seq"], run["first_full_state"] = b.commit_seq, b.full_state
            state["batches"] += 1
            if state["applied_seq"] is not None and b.commit_seq <= state["applied_seq"]:
                state["redelivered_batches"] += 1
            if b.full_state and not in_full_state:
                # A full state (a start without acknowledged progress, or a
                # full state sent again after a reconnect) replaces the
                # mirror: rows deleted since the mirror was saved are not in
                # it, and would otherwise stay.
                state["mirror"].clear()
            in_full_state = b.full_state and not b.snapshot_complete
            apply(state["mirror"], b.batch)
            if b.snapshot_complete:
                state["applied_seq"] = max(state["applied_seq"] or 0, b.commit_seq)
                save(state_path, state)
                since_ack += 1
                if since_ack >= ack_every:
                    ack(b)
                    since_ack = 0
                last = b
        want = target(target_path)
        if want is not None and state["applied_seq"] is not None and state["applied_seq"] >= want:
            if since_ack:
                ack(last)
            state["reconnects"] = state.get("reconnects", 0) + sub.reconnects
            save(state_path, state)
            sub.close()
            client.close()
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
