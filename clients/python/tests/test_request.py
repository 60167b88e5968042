"""Encoding and validation of ChangeRequests (no server)."""

import json

import pytest

import sluice
from sluice.request import change_request, encode


def test_minimal_request_has_only_the_table():
    assert change_request("demo.orders") == {"table": "demo.orders"}
    assert encode(change_request("demo.orders")) == b'{"table":"demo.orders"}'


def test_full_request_uses_proto_names_in_field_order_and_int64_strings():
    req = change_request(
        "demo.orders",
        from_snapshot=1234,
        to_snapshot=9_223_372_036_854_775_807,
        columns=["id", "country"],
        filter="country = 'SE' AND amount > 10",
        identity=["id"],
        fold_updates=True,
        net_changes=True,
        compression="zstd",
    )
    assert list(req) == ["table", "from_snapshot", "to_snapshot", "columns", "filter", "identity",
                         "fold_updates", "net_changes", "compression"]
    assert req["from_snapshot"] == "1234"
    assert req["to_snapshot"] == "9223372036854775807"
    assert json.loads(encode(req)) == req


def test_timestamps_are_int64_strings():
    req = change_request("a.b", from_timestamp_ms=1, to_timestamp_ms=2)
    assert req == {"table": "a.b", "from_timestamp_ms": "1", "to_timestamp_ms": "2"}


@pytest.mark.parametrize("kwargs", [
    {"columns": []},
    {"identity": []},
    {"filter": ""},
    {"filter": "   "},
    {"compression": ""},
    {"compression": None},
    {"fold_updates": False, "net_changes": False},
])
def test_unset_and_default_values_are_omitted(kwargs):
    assert change_request("a.b", **kwargs) == {"table": "a.b"}


def test_negative_and_zero_snapshot_ids_are_kept():
    assert change_request("a.b", from_snapshot=0)["from_snapshot"] == "0"
    assert change_request("a.b", to_snapshot=-5)["to_snapshot"] == "-5"


def test_numpy_like_ints_are_accepted():
    class Index:
        def __index__(self):
            return 42

    assert change_request("a.b", from_snapshot=Index())["from_snapshot"] == "42"


def test_tuples_and_generators_of_columns():
    assert change_request("a.b", columns=("x", "y"))["columns"] == ["x", "y"]
    assert change_request("a.b", identity=(c for c in ["k"]))["identity"] == ["k"]


def test_unicode_is_written_as_utf8():
    assert encode(change_request("a.b", filter="name = 'Åsa'")) == "{\"table\":\"a.b\",\"filter\":\"name = 'Åsa'\"}".encode()


@pytest.mark.parametrize("kwargs, message", [
    ({"table": ""}, "table is required"),
    ({"table": "  "}, "table is required"),
    ({"from_snapshot": 1, "from_timestamp_ms": 2}, "from_snapshot or from_timestamp_ms"),
    ({"to_snapshot": 1, "to_timestamp_ms": 2}, "to_snapshot or to_timestamp_ms"),
    ({"from_timestamp_ms": 3, "to_timestamp_ms": 2}, "is after"),
    ({"from_snapshot": 1 << 63}, "64-bit"),
    ({"to_snapshot": -(1 << 63) - 1}, "64-bit"),
    ({"columns": ["id", "id"]}, "appears twice in columns"),
    ({"identity": ["id", ""]}, "empty name in identity"),
    ({"compression": "gzip"}, "compression 'gzip'"),
])
def test_invalid_values_raise_invalid_argument(kwargs, message):
    kwargs = {"table": "a.b", **kwargs}
    with pytest.raises(sluice.InvalidArgument) as info:
        change_request(**kwargs)
    assert info.value.code == "INVALID_ARGUMENT"
    assert message in info.value.message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("kwargs", [
    {"table": None},
    {"table": b"a.b"},
    {"from_snapshot": "123"},
    {"from_snapshot": 1.5},
    {"to_snapshot": True},
    {"columns": "id"},
    {"columns": b"id"},
    {"columns": 5},
    {"columns": [1, 2]},
    {"identity": "id"},
    {"filter": 5},
    {"fold_updates": 1},
    {"net_changes": "yes"},
    {"compression": 1},
])
def test_wrong_types_raise_type_error(kwargs):
    kwargs = {"table": "a.b", **kwargs}
    with pytest.raises(TypeError):
        change_request(**kwargs)


def test_a_single_column_name_gets_a_helpful_message():
    with pytest.raises(TypeError, match=r"write \['id'\]"):
        change_request("a.b", columns="id")


def test_layout_is_sent_when_flat():
    assert change_request("a.b", layout="flat") == {"table": "a.b", "layout": "flat"}
    assert change_request("a.b", layout="") == {"table": "a.b"}
    assert change_request("a.b", layout=None) == {"table": "a.b"}
    with pytest.raises(sluice.InvalidArgument, match="layout 'wide'"):
        change_request("a.b", layout="wide")
    with pytest.raises(sluice.InvalidArgument, match="not fold_updates"):
        change_request("a.b", layout="flat", fold_updates=True)
    with pytest.raises(TypeError, match="layout must be a str"):
        change_request("a.b", layout=1)


def test_refs_and_tag_names():
    assert change_request("a.b", ref="audit") == {"table": "a.b", "ref": "audit"}
    assert change_request("a.b", from_snapshot="v1", to_snapshot=7, ref="audit") == {
        "table": "a.b", "to_snapshot": "7", "ref": "audit", "from_ref": "v1"}
    assert change_request("a.b", to_snapshot="v2") == {"table": "a.b", "to_ref": "v2"}
    with pytest.raises(sluice.InvalidArgument):
        change_request("a.b", from_snapshot="v1", from_timestamp_ms=5)
    with pytest.raises(sluice.InvalidArgument):
        change_request("a.b", ref=" audit")
    with pytest.raises(TypeError):
        change_request("a.b", ref=3)


def test_options_are_one_table_of_fields():
    # Every call that builds a request takes the same keyword options.
    assert change_request("a.b", lineage=True, ref="audit") == {"table": "a.b", "lineage": True, "ref": "audit"}
    assert change_request("a.b", lineage=False) == {"table": "a.b"}
    with pytest.raises(TypeError, match="lineage must be a bool"):
        change_request("a.b", lineage="yes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'on_gap'"):
        change_request("a.b", on_gap="resync")  # a stream's option, not a window's
    with pytest.raises(TypeError, match="unexpected keyword argument 'linage'"):
        change_request("a.b", linage=True)
    assert set(sluice.ChangeOptions.__annotations__) < set(sluice.StreamOptions.__annotations__)


def test_client_calls_pass_the_options_on(client, server):
    client.explain("a.b", lineage=True, ref="audit")
    assert server.actions[-1] == ("explain", {"table": "a.b", "lineage": True, "ref": "audit"})
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        client.explain("a.b", on_gap="resync")
