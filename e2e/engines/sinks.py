"""An idempotent sink of micro-batches and what the tests check of it.

Micro-batch ``b`` is written to ``batch-<b>.json`` (to a temporary name,
then renamed): a batch that Spark runs again after a restart, with the
same id and the same offsets, replaces its file, so the sink holds each
change once. The sink's state is its batches' change rows applied in
batch order.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Dict, List, Tuple

from conftest import apply_flat


def _jsonable(v):
    return v.isoformat() if isinstance(v, datetime) else v


def write_batch(sink: Path, batch_id: int, rows: List[dict]) -> None:
    """Write one micro-batch's rows, replacing an earlier run's."""
    path = sink / f"batch-{batch_id:06d}.json"
    tmp = sink / f".batch-{batch_id:06d}.tmp"
    tmp.write_text(json.dumps([{k: _jsonable(v) for k, v in r.items()} for r in rows]))
    os.replace(tmp, path)


def read_batches(sink: Path) -> List[Tuple[int, List[dict]]]:
    """The sink's batches in batch order, timestamps as datetimes."""
    out = []
    for p in sorted(sink.glob("batch-*.json")):
        rows = json.loads(p.read_text())
        for r in rows:
            for k in ("created_at", "_commit_timestamp"):
                if r.get(k) is not None:
                    r[k] = datetime.fromisoformat(r[k])
        out.append((int(p.stem.split("-")[1]), rows))
    return out


def sink_state(batches: List[Tuple[int, List[dict]]]) -> Dict[int, tuple]:
    state: Dict[int, tuple] = {}
    for _, rows in batches:
        apply_flat(state, rows)
    return state


def batch_end(checkpoint: Path, batch_id: int) -> dict:
    """The source's end offset of a micro-batch, from Spark's checkpoint
    (offsets/<id>: a version line, the batch's metadata, then one offset
    per source)."""
    lines = (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
    return json.loads(lines[-1])
