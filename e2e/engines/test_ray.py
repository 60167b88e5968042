"""sluice.ray.read_changes through two flightd replicas: one read task per
endpoint, the rows of one DoGet, and fail-over when a replica is gone."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sluice
from sluice.parallel import Connection, plan

from conftest import DEMO, create_orders, orders, single_read


def test_ray_reads_the_demo_in_parallel(ray_local, replicas):
    import sluice.ray

    uri = replicas.uris[0]
    ds = sluice.ray.read_changes(uri, DEMO, max_endpoints=8)
    p = plan(Connection(uri), DEMO, max_endpoints=8, layout="flat")
    assert len(p.parts) > 1
    got = pa.concat_tables(ray_local.get(ds.to_arrow_refs()))
    assert got.equals(single_read(uri, DEMO, layout="flat"))
    assert f"{len(p.parts)} tasks executed" in ds.stats()

    # The row layout, a window, columns and a filter.
    with sluice.connect(uri) as c:
        snaps = [s["snapshot"] for s in c.snapshots(DEMO)]
    req = dict(from_snapshot=snaps[1], columns=["order_id", "status"], filter="country != 'DK'")
    ds = sluice.ray.read_changes(uri, DEMO, layout=None, **req)
    got = pa.concat_tables(ray_local.get(ds.to_arrow_refs()))
    assert got.equals(single_read(uri, DEMO, **req))

    with pytest.raises(sluice.InvalidArgument, match="nope"):
        sluice.ray.read_changes(uri, DEMO, columns=["nope"])


def test_ray_read_falls_over_to_the_live_replica(ray_local, replicas):
    import sluice.ray

    tbl = create_orders(replicas.warehouse, "e2e.ray")
    for k in range(4):
        tbl.append(orders(list(range(k * 20_000, (k + 1) * 20_000))))
    uri = replicas.uris[0]
    want = single_read(uri, "e2e.ray", layout="flat")
    ds = sluice.ray.read_changes(uri, "e2e.ray", max_endpoints=4)  # planned: half the parts start on replica 1
    replicas.servers[1].kill()
    got = pa.concat_tables(ray_local.get(ds.to_arrow_refs()))
    assert got.equals(want)
