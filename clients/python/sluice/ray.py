"""Ray Data reads Sluice change feeds: one read task per endpoint.

::

    import sluice.ray

    ds = sluice.ray.read_changes("grpc://127.0.0.1:8815", "demo.orders",
                                 from_snapshot=1234, columns=["order_id", "amount"])
    ds.groupby("_change_type").count().show()

The window is planned when :func:`read_changes` is called, on the driver
(``GetFlightInfo`` with ``max_endpoints``): it is pinned then, and each of
its endpoints is one read task, which streams the endpoint's ticket from
its locations in turn (:func:`sluice.parallel.read_part`: a replica that
fails mid-read falls over to the next, which resumes after the rows
already read).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, cast

import pyarrow as pa
try:
    from ray.data import Dataset, read_datasource
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("sluice.ray needs Ray Data: pip install 'sluice-client[ray]'") from exc

from .engine_options import DEFAULT_MAX_ENDPOINTS
from .parallel import Connection, Part, Plan, plan, read_part

__all__ = ["read_changes", "SluiceDatasource", "BLOCK_BATCHES"]

#: A read task yields a block every this many record batches (a batch is
#: at most 4 MiB on the wire).
BLOCK_BATCHES = 16


class SluiceDatasource(Datasource):
    """A planned change window as a ``ray.data.Datasource``: one read task
    per endpoint."""

    def __init__(self, conn: Connection, table: str, *, max_endpoints: int = DEFAULT_MAX_ENDPOINTS,
                 **request: Any) -> None:
        """Plan the window (pinning it) on ``conn``'s server.

        Args:
            conn: How to connect (the workers connect the same way).
            table: ``namespace.table``.
            max_endpoints: Split the window into at most this many read
                tasks (a server without replicas returns one).
            **request: The arguments of :meth:`sluice.Client.changes`.
        """
        super().__init__()  # type: ignore[no-untyped-call]
        self.conn = conn
        self.table = table
        self.plan: Plan = plan(conn, table, max_endpoints=max_endpoints, **request)

    def get_name(self) -> str:
        """The name in Ray's progress and stats."""
        return f"Sluice({self.table})"

    def estimate_inmemory_data_size(self) -> Optional[int]:
        """Unknown before reading."""
        return None

    def get_read_tasks(self, parallelism: int, per_task_row_limit: Optional[int] = None,
                       data_context: Any = None) -> List[ReadTask]:
        """One read task per endpoint (``parallelism`` cannot split an
        endpoint further, and is ignored)."""
        tasks = []
        for part in self.plan.parts:
            meta = BlockMetadata(num_rows=None, size_bytes=None, input_files=None, exec_stats=None)
            tasks.append(ReadTask(_reader(self.conn, part, self.plan.schema), meta, schema=self.plan.schema,
                                  per_task_row_limit=per_task_row_limit))
        return tasks


def _reader(conn: Connection, part: Part, schema: pa.Schema) -> Callable[[], Iterable[pa.Table]]:
    def read() -> Iterator[pa.Table]:
        chunk: List[pa.RecordBatch] = []
        for batch in read_part(conn, part, schema):
            chunk.append(batch)
            if len(chunk) >= BLOCK_BATCHES:
                yield pa.Table.from_batches(chunk, schema=schema)
                chunk = []
        if chunk:
            yield pa.Table.from_batches(chunk, schema=schema)

    return read


def read_changes(
    uri: str,
    table: str,
    *,
    token: Optional[str] = None,
    user: Optional[str] = None,
    password: Optional[str] = None,
    headers: Optional[Sequence[Tuple[str, str]]] = None,
    tls_root_certs: Optional[bytes] = None,
    cert_chain: Optional[bytes] = None,
    private_key: Optional[bytes] = None,
    override_hostname: Optional[str] = None,
    disable_server_verification: bool = False,
    timeout: Optional[float] = None,
    layout: Optional[str] = "flat",
    max_endpoints: int = DEFAULT_MAX_ENDPOINTS,
    **request: Any,
) -> Dataset:
    """Read a change window into a ``ray.data.Dataset``.

    Args:
        uri: The server that plans the window.
        table: ``namespace.table``.
        token, user, password, headers: Credentials, as
            :func:`sluice.connect` takes them.
        tls_root_certs, cert_chain, private_key: PEM bytes (the workers
            get them with the task, not from their own files).
        override_hostname, disable_server_verification: TLS settings.
        timeout: Seconds that bound each planning call.
        layout: ``"flat"`` (the default: the data columns, then
            ``_change_type``, ``_commit_version``, ``_commit_timestamp``)
            or None (``op``, ``before``, ``after``, ``snapshot``, ``ts``).
        max_endpoints: At most this many read tasks.
        **request: The rest of :meth:`sluice.Client.changes`'s arguments:
            ``from_snapshot``, ``to_snapshot``, ``columns``, ``filter``,
            ``identity``, ``net_changes``, ``from_timestamp_ms``,
            ``to_timestamp_ms``, ``compression``, and the
            :class:`sluice.ChangeOptions` (``ref``, ``lineage``).

    Raises:
        TypeError, SluiceError: a bad argument or a refused request, at
            once (the window is planned here).
    """
    conn = Connection(uri, token=token, user=user, password=password, headers=tuple(headers or ()),
                      tls_root_certs=tls_root_certs, cert_chain=cert_chain, private_key=private_key,
                      override_hostname=override_hostname,
                      disable_server_verification=disable_server_verification, timeout=timeout)
    if request.get("net_changes"):
        max_endpoints = 1  # a net window is not split (the server refuses to)
    source = SluiceDatasource(conn, table, max_endpoints=max_endpoints, layout=layout, **request)
    return cast(Dataset, read_datasource(source, override_num_blocks=max(1, len(source.plan.parts))))
