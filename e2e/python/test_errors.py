"""Bad input gets the contract's gRPC code and a useful message, through
the real pyarrow client (which maps codes to its exception types)."""

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from conftest import read_chunks, request


def cases(fixture):
    snaps = fixture["snapshots"]
    t = fixture["table"]
    return [
        ("malformed JSON", b'{"table": ', pa.ArrowInvalid, "malformed JSON"),
        ("unknown field", b'{"tabel": "x.y"}', pa.ArrowInvalid, "unknown field"),
        ("no table", b"{}", pa.ArrowInvalid, "table is required"),
        ("unknown table", request(table="e2e.nope"), pa.ArrowKeyError, "e2e.nope"),
        ("unknown column", request(table=t, columns=["nope"]), pa.ArrowInvalid, '"nope"'),
        ("bad filter", request(table=t, filter="qty >> 3"), pa.ArrowInvalid, "position"),
        ("unknown snapshot", request(table=t, from_snapshot="99"), pa.ArrowKeyError, "99"),
        (
            "from not an ancestor of to",
            request(table=t, from_snapshot=str(snaps[-1]["snapshot"]), to_snapshot=str(snaps[0]["snapshot"])),
            pa.ArrowInvalid,
            "not an ancestor",
        ),
    ]


@pytest.mark.parametrize("index", range(8))
def test_do_get_errors(fclient, fixture, index):
    name, ticket, exc, msg = cases(fixture)[index]
    with pytest.raises(exc) as err:
        read_chunks(fclient, ticket)
    assert msg in str(err.value), name


@pytest.mark.parametrize("index", range(8))
def test_flight_info_errors(fclient, fixture, index):
    name, cmd, exc, msg = cases(fixture)[index]
    with pytest.raises(exc) as err:
        fclient.get_flight_info(flight.FlightDescriptor.for_command(cmd))
    assert msg in str(err.value), name


def test_action_errors(fclient):
    with pytest.raises(pa.ArrowInvalid, match="unknown action"):
        list(fclient.do_action(flight.Action("drop_everything", b"{}")))
    with pytest.raises(pa.ArrowKeyError, match="e2e.nope"):
        list(fclient.do_action(flight.Action("commit_seq", b'{"table": "e2e.nope"}')))
    with pytest.raises(pa.ArrowInvalid, match="malformed JSON"):
        list(fclient.do_action(flight.Action("list_snapshots", b"[1, 2]")))
