"""Basic credentials: the Handshake, its renewal once per call when the
server refuses a token, and acks that survive an outage."""

import threading
import time

import pyarrow.flight as flight
import pytest

import sluice
from conftest import PASSWORD, USER


def connect(server, **kwargs):
    return sluice.connect(f"127.0.0.1:{server.port}", user=USER, password=PASSWORD, timeout=10, **kwargs)


def bearers(server, method):
    return [c["headers"].get("authorization") for c in server.headers.calls if c["method"] == method]


def test_connect_handshakes_and_calls_send_the_token(basic_server):
    with connect(basic_server) as c:
        assert basic_server.basic.handshakes == 1
        assert c.commit_seq("a.b")["commit_seq"] == 7
        assert bearers(basic_server, flight.FlightMethod.DO_ACTION) == [["Bearer tok-0-1"]]


def test_bad_credentials(basic_server):
    with pytest.raises(sluice.Unauthenticated, match="wrong user name or password"):
        sluice.connect(f"127.0.0.1:{basic_server.port}", user=USER, password="nope")
    with pytest.raises(sluice.InvalidArgument, match="not both"):
        sluice.connect(f"127.0.0.1:{basic_server.port}", "tok", user=USER, password=PASSWORD)
    with pytest.raises(sluice.InvalidArgument, match="not both"):
        sluice.connect(f"127.0.0.1:{basic_server.port}", user=USER, password=PASSWORD,
                       headers={"authorization": "Bearer x"})
    with pytest.raises(TypeError, match="both"):
        sluice.connect(f"127.0.0.1:{basic_server.port}", user=USER)
    with pytest.raises(sluice.InvalidArgument, match="user is empty"):
        sluice.connect(f"127.0.0.1:{basic_server.port}", user=" ", password=PASSWORD)


def test_a_restarted_server_gets_a_new_handshake(basic_server):
    with connect(basic_server) as c:
        basic_server.basic.restart()
        assert c.commit_seq("a.b")["commit_seq"] == 7
        assert basic_server.basic.handshakes == 2
        # The new token serves the next calls, planning and streams alike.
        assert c.changes_table("a.b").num_rows == 5
        assert c.schema("a.b").names[0] == "op"
        basic_server.basic.restart()
        assert c.changes_table("a.b").num_rows == 5  # GetFlightInfo renews
        basic_server.basic.restart()
        assert [w["commit_seq"] for w in c.watch_commits("a.b")] == [1, 2, 3]
        basic_server.basic.restart()
        assert [b.snapshot for b in c.subscribe("follow.ok", follow=False)] == [1, 2, 2]
        assert basic_server.basic.handshakes == 5


def test_a_second_refusal_is_raised(basic_server):
    basic_server.basic.refuse = {flight.FlightMethod.DO_GET, flight.FlightMethod.DO_ACTION}
    with connect(basic_server) as c:
        with pytest.raises(sluice.Unauthenticated, match="refused by the test"):
            c.changes_table("a.b")
        assert basic_server.basic.handshakes == 2
        # One DoGet, and one more with the token of a new Handshake.
        assert bearers(basic_server, flight.FlightMethod.DO_GET) == [["Bearer tok-0-1"], ["Bearer tok-0-2"]]
        with pytest.raises(sluice.Unauthenticated, match="refused by the test"):
            c.commit_seq("a.b")
        assert basic_server.basic.handshakes == 3
        # A subscription with reconnect does not loop on it either.
        with pytest.raises(sluice.Unauthenticated, match="refused by the test"):
            c.subscribe("follow.ok", reconnect=True, max_backoff=0.01)
        assert basic_server.basic.handshakes == 4
        assert basic_server.streams == []


def test_a_token_client_does_not_retry(basic_server):
    with sluice.connect(f"127.0.0.1:{basic_server.port}", token="tok-0-0") as c:
        assert c.commit_seq("a.b")["commit_seq"] == 7
        basic_server.basic.restart()
        with pytest.raises(sluice.Unauthenticated, match="unknown bearer token"):
            c.commit_seq("a.b")
        assert basic_server.basic.handshakes == 0


def test_subscription_reconnects_and_acks_across_a_restart(basic_server):
    basic_server.on_break = basic_server.basic.restart
    with connect(basic_server) as c:
        sub = c.subscribe("follow.flaky", consumer="c1", reconnect=True, max_backoff=0.05)
        got = []
        for b in sub:
            got.append((b.snapshot, b.redelivered))
            if b.snapshot_complete:
                assert b.ack()["snapshot"] == b.snapshot
        assert got == [(1, False), (2, False), (2, True), (2, True)]
        assert sub.reconnects == 1
        assert basic_server.basic.handshakes == 2
        assert [a for a in basic_server.actions if a[0] == "ack"] == [
            ("ack", {"consumer": "c1", "table": "follow.flaky", "snapshot": 1}),
            ("ack", {"consumer": "c1", "table": "follow.flaky", "snapshot": 2})]


def test_ack_waits_out_an_outage_with_reconnect(client, server):
    sub = client.subscribe("follow.ok", consumer="c1", reconnect=True, max_backoff=0.05)
    b = next(sub)
    server.acks_unavailable = 3
    assert b.ack()["snapshot"] == 1
    assert server.acks_unavailable == 0
    assert len([a for a in server.actions if a[0] == "ack"]) == 4


def test_ack_without_reconnect_raises_at_once(client, server):
    b = next(client.subscribe("follow.ok", consumer="c1"))
    server.acks_unavailable = 1
    with pytest.raises(sluice.Unavailable, match="shutting down"):
        b.ack()


def test_an_undelivered_ack_says_so(client, server):
    sub = client.subscribe("follow.ok", consumer="c1", reconnect=True, max_backoff=0.05)
    b = next(sub)
    server.acks_unavailable = 1_000_000
    closer = threading.Timer(0.3, sub.close)
    closer.start()
    start = time.monotonic()
    with pytest.raises(sluice.Cancelled, match="ack of snapshot 1 for consumer 'c1' on follow.ok was not delivered"):
        b.ack()
    assert time.monotonic() - start < 5
    closer.join()
