"""Sluice: read change feeds of lakehouse tables over Arrow Flight.

Example::

    import sluice

    with sluice.connect("grpc://127.0.0.1:8815") as client:
        print(client.commit_seq("demo.orders"))
        reader = client.changes("demo.orders", columns=["order_id", "amount"])
        for batch in reader:
            ...
        # A DataFrame whose int64 ids stay exact (not floats):
        df = sluice.to_pandas(client.changes("demo.orders", net_changes=True), flatten=True)
        pl_df = sluice.to_polars(client.changes("demo.orders"))   # needs polars
        for b in client.batches("demo.orders"):
            if b.snapshot_complete:
                checkpoint = b.snapshot

        # Follow the table as it commits, resuming after the last ack.
        for b in client.subscribe("demo.orders", consumer="worker-1"):
            apply(b.batch)
            if b.snapshot_complete:
                b.ack()

Every failure raises a :class:`SluiceError` whose ``code`` is the gRPC code
name and whose ``message`` is the server's message.
"""

from .client import DEFAULT_URI, ChangeBatch, Client, connect
from .frames import to_pandas, to_polars
from .request import ChangeOptions, StreamOptions
from .subscription import DEFAULT_MAX_BACKOFF, START_MODES, FollowBatch, Subscription
from .errors import (
    Cancelled,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    SluiceError,
    Unauthenticated,
    Unavailable,
    Unimplemented,
)

try:  # the version the package was built with (the repository's VERSION file): one place, not a copy
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("sluice-client")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "DEFAULT_URI",
    "ChangeBatch",
    "ChangeOptions",
    "StreamOptions",
    "Client",
    "connect",
    "to_pandas",
    "to_polars",
    "DEFAULT_MAX_BACKOFF",
    "FollowBatch",
    "Subscription",
    "START_MODES",
    "SluiceError",
    "InvalidArgument",
    "NotFound",
    "FailedPrecondition",
    "Unauthenticated",
    "PermissionDenied",
    "ResourceExhausted",
    "Unavailable",
    "Unimplemented",
    "Internal",
    "Cancelled",
    "DeadlineExceeded",
    "__version__",
]
