"""subscribe(), acks and the consumer actions, against the fake server."""

import inspect

import pytest

import sluice


def test_subscribe_yields_changes_and_hides_heartbeats(client, server):
    sub = client.subscribe("follow.ok", consumer="c1", start="latest", columns=["id"], filter="id > 0")
    got = list(sub)
    assert [b.snapshot for b in got] == [1, 2, 2]
    assert [b.snapshot_complete for b in got] == [True, False, True]
    assert not any(b.heartbeat for b in got)
    assert server.streams[-1] == {"table": "follow.ok", "columns": ["id"], "filter": "id > 0", "follow": True,
                                  "start": "latest", "consumer": "c1"}
    assert sub.last_metadata["snapshot"] == 2


def test_heartbeats_on_request(client):
    got = list(client.subscribe("follow.ok", heartbeats=True))
    assert [b.heartbeat for b in got] == [False, True, False, False]
    assert got[1].num_rows == 0 and not got[1].snapshot_complete


def test_ack(client, server):
    sub = client.subscribe("follow.ok", consumer="c1")
    first = next(sub)
    assert first.ack()["snapshot"] == 1
    assert server.actions[-1] == ("ack", {"consumer": "c1", "table": "follow.ok", "snapshot": 1})
    partial = next(sub)
    with pytest.raises(sluice.FailedPrecondition, match="checkpoint"):
        partial.ack()
    sub.close()
    assert sub.closed
    assert list(sub) == []
    no_consumer = next(iter(client.subscribe("follow.ok")))
    with pytest.raises(sluice.FailedPrecondition, match="consumer"):
        no_consumer.ack()


def test_reconnect_resumes_where_the_stream_stood(client, server):
    sub = client.subscribe("follow.flaky", consumer="c1", reconnect=True, max_backoff=0.05)
    got = list(sub)
    # The first stream fails in the middle of snapshot 2; the second starts
    # after snapshot 1, explicitly (the consumer acknowledged nothing: its
    # progress would start over), and delivers all of snapshot 2.
    assert [(b.snapshot, b.num_rows) for b in got] == [(1, 2), (2, 1), (2, 1), (2, 1)]
    assert [b.redelivered for b in got] == [False, False, True, True]
    assert sub.reconnects == 1 and sub.redelivered_batches == 2
    assert server.streams[-1]["consumer"] == "c1"
    assert server.streams[-1]["from_snapshot"] == "1" and server.streams[-1]["start"] == "from-snapshot"


def test_reconnect_without_consumer_resumes_after_what_it_saw(client, server):
    sub = client.subscribe("follow.flaky", reconnect=True, max_backoff=0.05)
    list(sub)
    assert sub.reconnects == 1
    assert server.streams[-1]["from_snapshot"] == "1" and server.streams[-1]["start"] == "from-snapshot"


def test_reconnect_inside_the_full_state_starts_it_over(client, server):
    sub = client.subscribe("follow.fullflaky", consumer="c1", reconnect=True, max_backoff=0.05)
    got = list(sub)
    # The full state of snapshot 1 broke off after its first batch: the
    # whole full state of snapshot 1 comes again, then snapshot 2.
    assert server.streams[-1]["start"] == "from-snapshot-full" and server.streams[-1]["from_snapshot"] == "1"
    assert [(b.snapshot, b.full_state, b.redelivered) for b in got] == [
        (1, True, False), (1, True, True), (1, True, True), (2, False, False)]


def test_no_reconnect_raises(client):
    sub = client.subscribe("follow.flaky")
    with pytest.raises(sluice.Unavailable, match="shutting down"):
        list(sub)


def test_subscribe_errors(client):
    with pytest.raises(sluice.NotFound):
        list(client.subscribe("error.notfound"))
    with pytest.raises(sluice.InvalidArgument, match="start"):
        client.subscribe("a.b", start="earliest")
    with pytest.raises(sluice.InvalidArgument, match="from_snapshot"):
        client.subscribe("a.b", start="from-snapshot")
    with pytest.raises(sluice.InvalidArgument, match="from_timestamp_ms"):
        client.subscribe("a.b", start="from-timestamp")
    with pytest.raises(sluice.InvalidArgument, match="consumer id"):
        client.subscribe("a.b", consumer="a b")
    with pytest.raises(TypeError):
        client.subscribe("a.b", consumer=5)
    with pytest.raises(TypeError):
        client.subscribe("a.b", follow="yes")


def test_bounded_stream_request(client, server):
    list(client.subscribe("follow.ok", follow=False))
    assert server.streams[-1] == {"table": "follow.ok", "start": "latest-full"}
    list(client.subscribe("follow.ok", from_snapshot=5, start="from-snapshot-full"))
    assert server.streams[-1] == {"table": "follow.ok", "from_snapshot": "5", "follow": True,
                                  "start": "from-snapshot-full"}


def test_consumer_actions(client, server):
    assert client.consumer_progress("c1", "a.b")["lag_commits"] == 1
    with pytest.raises(sluice.NotFound):
        client.consumer_progress("nobody", "a.b")
    assert client.list_consumers("a.b")[0]["consumer"] == "c1"
    assert client.reset_consumer("c1", "a.b") is True
    assert client.ack("c1", "a.b", 7)["snapshot"] == 7
    with pytest.raises(TypeError):
        client.ack("c1", "a.b", "7")
    assert [c["commit_seq"] for c in client.watch_commits("a.b")] == [1, 2, 3]


def test_max_backoff_defaults_to_that_of_the_go_client(client):
    # Go: DefaultMaxBackoff = 30 * time.Second; the server's --max-backoff
    # default is 30s too.
    assert sluice.DEFAULT_MAX_BACKOFF == 30.0
    assert inspect.signature(sluice.Client.subscribe).parameters["max_backoff"].default == sluice.DEFAULT_MAX_BACKOFF
    with client.subscribe("follow.steady", reconnect=True) as sub:
        assert sub._max_backoff == 30.0


def test_stream_options_and_a_consumer_on_a_ref(client, server):
    sub = client.subscribe("follow.ok", consumer="c1", ref="audit", lineage=True, on_gap="resync")
    assert server.streams[-1] == {"table": "follow.ok", "ref": "audit", "lineage": True, "on_gap": "resync",
                                  "follow": True, "consumer": "c1"}
    next(sub).ack()
    assert server.actions[-1] == ("ack", {"consumer": "c1", "table": "follow.ok", "snapshot": 1, "ref": "audit"})
    sub.close()
    with pytest.raises(sluice.InvalidArgument, match="on_gap"):
        client.subscribe("follow.ok", on_gap="skip")


def test_consumer_actions_on_a_ref(client, server):
    client.ack("c1", "a.b", 7, ref="audit")
    assert server.actions[-1] == ("ack", {"consumer": "c1", "table": "a.b", "ref": "audit", "snapshot": 7})
    client.consumer_progress("c1", "a.b", ref="audit")
    assert server.actions[-1] == ("consumer_progress", {"consumer": "c1", "table": "a.b", "ref": "audit"})
    client.reset_consumer("c1", "a.b", ref="audit")
    assert server.actions[-1] == ("reset_consumer", {"consumer": "c1", "table": "a.b", "ref": "audit"})
    list(client.watch_commits("a.b", ref="audit"))
    assert server.actions[-1] == ("watch_commits", {"table": "a.b", "ref": "audit"})
