"""The engines' readers with credentials: a bearer token (as an option
and from a file) and basic auth, on two replicas that share the
handshake's secret."""

from __future__ import annotations

import os
import subprocess

import pyarrow as pa
import pytest

import sluice

from conftest import DEMO, Replicas

USER, PASSWORD = "alice", "correct horse battery staple"


def flightd_tool(stdin: str, *args: str) -> str:
    out = subprocess.run([os.environ["SLUICE_FLIGHTD"], *args], input=stdin + "\n", capture_output=True,
                         text=True, check=True)
    return out.stdout.rstrip("\n")


@pytest.fixture
def secured(tmp_path):
    token = flightd_tool("", "new-token")
    (tmp_path / "tokens.yaml").write_text("tokens:\n" + flightd_tool(token, "hash-token", "--principal", "analyst")
                                          + "\n")
    (tmp_path / "users.yaml").write_text("users:\n" + flightd_tool(PASSWORD, "hash-password", "--user", USER) + "\n")
    (tmp_path / "secret").write_text(os.urandom(48).hex() + "\n")
    (tmp_path / "token").write_text(token + "\n")
    r = Replicas(tmp_path / "warehouse", tmp_path, "--auth-mode", "token,basic",
                 "--auth-tokens-file", str(tmp_path / "tokens.yaml"), "--auth-users-file", str(tmp_path / "users.yaml"),
                 "--auth-secret-file", str(tmp_path / "secret"))
    yield r, token, tmp_path / "token"
    r.stop()


def test_spark_and_ray_read_with_credentials(spark, ray_local, secured):
    import sluice.ray

    replicas, token, token_file = secured
    uri = replicas.uris[0]
    with sluice.connect(uri, token) as c:
        want = c.changes_table(DEMO, layout="flat")
    assert want.num_rows == 13

    def spark_read(**options):
        r = spark.read.format("sluice").option("uri", uri).option("table", DEMO).option("max_endpoints", "8")
        for k, v in options.items():
            r = r.option(k, v)
        return r.load().toArrow()

    for options in [{"token": token}, {"token_file": str(token_file)}, {"user": USER, "password": PASSWORD}]:
        got = spark_read(**options)
        for name in want.column_names:
            assert got[name].cast(want[name].type).equals(want[name]), (options, name)
    with pytest.raises(Exception, match="UNAUTHENTICATED"):
        spark_read()
    with pytest.raises(Exception, match="UNAUTHENTICATED"):
        spark_read(token="not-a-token")

    ds = sluice.ray.read_changes(uri, DEMO, user=USER, password=PASSWORD, max_endpoints=8)
    assert pa.concat_tables(ray_local.get(ds.to_arrow_refs())).equals(want)
    with pytest.raises(sluice.Unauthenticated):
        sluice.ray.read_changes(uri, DEMO)
