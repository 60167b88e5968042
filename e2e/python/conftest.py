"""Shared fixtures of the e2e tests.

The Go harness (e2e/python_test.go) starts flightd on a warehouse that
iceberg-go wrote and passes:

- SLUICE_ADDR: the flightd URI (grpc://127.0.0.1:port),
- SLUICE_E2E_FIXTURE: a JSON file with what was written (per snapshot: id,
  parent, commit_seq, timestamp_ms and the appended rows; timestamps in
  microseconds),
- SLUICE_FLIGHTD: the flightd binary, for tests that start their own server.
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pyarrow.flight as flight
import pytest


@pytest.fixture(scope="session")
def fixture():
    with open(os.environ["SLUICE_E2E_FIXTURE"]) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def addr():
    return os.environ["SLUICE_ADDR"]


@pytest.fixture
def fclient(addr):
    client = flight.connect(addr)
    yield client
    client.close()


class Flightd:
    """A flightd process started by a test."""

    def __init__(self, args, tmp_path):
        ready = tmp_path / f"ready-{time.monotonic_ns()}"
        self.log = open(tmp_path / f"flightd-{time.monotonic_ns()}.log", "w+")
        self.proc = subprocess.Popen(
            [os.environ["SLUICE_FLIGHTD"], "--listen", "127.0.0.1:0", "--ready-file", str(ready), *args],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text().strip()):
            if self.proc.poll() is not None:
                raise RuntimeError(f"flightd exited with {self.proc.returncode}: {self.output()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"flightd did not serve within 60s: {self.output()}")
            time.sleep(0.02)
        self.uri = "grpc://" + ready.read_text().strip()

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        """Stop with SIGTERM; a clean exit is part of the contract."""
        if self.proc.poll() is None:
            self.proc.terminate()
            rc = self.proc.wait(timeout=30)
            assert rc == 0, f"flightd exited with {rc} on SIGTERM: {self.output()}"


@pytest.fixture
def start_flightd(tmp_path):
    started = []

    def start(*args):
        f = Flightd([str(a) for a in args], tmp_path)
        started.append(f)
        return f

    yield start
    for f in started:
        f.stop()


def read_chunks(client, ticket_bytes):
    """Reads a stream to its end, returning (table, [app_metadata dicts])."""
    reader = client.do_get(flight.Ticket(ticket_bytes))
    batches, metas = [], []
    while True:
        try:
            chunk = reader.read_chunk()
        except StopIteration:
            break
        assert chunk.data is not None, "a metadata-only message was sent"
        assert chunk.app_metadata is not None, "a batch without app_metadata"
        meta = json.loads(chunk.app_metadata.to_pybytes())
        assert meta["rows"] == chunk.data.num_rows
        batches.append(chunk.data)
        metas.append(meta)
    import pyarrow as pa

    return pa.Table.from_batches(batches, schema=reader.schema), metas


def request(**fields):
    """A JSON ChangeRequest, written by hand as any client would."""
    return json.dumps({k: v for k, v in fields.items() if v is not None}).encode()


@pytest.fixture(scope="session")
def repo_root():
    return Path(__file__).resolve().parents[2]
