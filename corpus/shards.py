"""ShardWriter: buffered rows become zstd Parquet shards, each written atomically.

A shard is written to a hidden temporary name in the same folder, flushed to disk, then renamed into
place, so a reader (or `datasets.load_dataset("parquet", data_dir=…)`) sees either the whole shard or
nothing, even when the run is killed mid-write. Shard names carry the run and the worker:
`data/{config}/train-{run_id}-{worker:05d}-{n:05d}.parquet`, so many workers write into one folder with no
coordination. The `train-` prefix names the split explicitly: `datasets` otherwise guesses splits from
words in file names, and a run id such as `smoke-test` would turn into a test split. A shard closes when it holds `max_rows` rows or about `max_bytes` of row data.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kernelvault.corpus.schema import ATTEMPT_SCHEMA, conform_shards_in_place


def _approximate_size(row: dict[str, Any]) -> int:
    return sum(len(value) if isinstance(value, str) else sys.getsizeof(value) for value in row.values())


class ShardWriter:
    def __init__(
        self,
        out_dir: Path,
        config: str,
        run_id: str,
        worker: int = 0,
        max_rows: int = 1000,
        max_bytes: int = 64 << 20,
        schema: pa.Schema = ATTEMPT_SCHEMA,
        flush_interval_s: float | None = None,
        on_shard: Callable[[Path, list[dict[str, Any]]], None] | None = None,
    ) -> None:
        """`flush_interval_s` closes a shard when its oldest row is that old, so a long run commits progress
        regularly; `on_shard(path, rows)` runs after each shard is in place (the run ledger hooks in here)."""
        self.folder = Path(out_dir) / "data" / config
        self.folder.mkdir(parents=True, exist_ok=True)
        self.run_id, self.worker = run_id, worker
        self.max_rows, self.max_bytes = max_rows, max_bytes
        self.schema = schema
        self.flush_interval_s = flush_interval_s
        self.on_shard = on_shard
        self.written: list[Path] = []
        self.rows_written = 0
        self._buffer: list[dict[str, Any]] = []
        self._buffered_bytes = 0
        self._oldest_row_at = 0.0
        self._remove_stale_temporaries()
        # a resumed run's older shards, brought to this layout before new ones land
        if schema is ATTEMPT_SCHEMA:
            conform_shards_in_place(self.folder)
        self._next_index = self._first_free_index()

    def _remove_stale_temporaries(self) -> None:
        """A killed writer may leave a half-written temporary of its own; nobody else will finish it."""
        for stale in self.folder.glob(f".train-{self.run_id}-{self.worker:05d}-*.parquet.tmp"):
            stale.unlink(missing_ok=True)

    def _first_free_index(self) -> int:
        """Continue numbering after shards a previous process of the same run and worker left."""
        prefix = f"train-{self.run_id}-{self.worker:05d}-"
        taken = [
            int(p.stem[len(prefix) :])
            for p in self.folder.glob(f"{prefix}*.parquet")
            if p.stem[len(prefix) :].isdigit()
        ]
        return max(taken, default=-1) + 1

    def write(self, row: dict[str, Any]) -> None:
        self.write_group([row])

    def write_many(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.write(row)

    def write_group(self, rows: Iterable[dict[str, Any]]) -> None:
        """Write rows that belong together (one trajectory's turns): never split across two shards."""
        rows = list(rows)
        if not rows:
            return
        if not self._buffer:
            self._oldest_row_at = time.monotonic()
        self._buffer.extend(rows)
        self._buffered_bytes += sum(_approximate_size(row) for row in rows)
        interval = self.flush_interval_s
        too_old = interval is not None and time.monotonic() - self._oldest_row_at >= interval
        if len(self._buffer) >= self.max_rows or self._buffered_bytes >= self.max_bytes or too_old:
            self.flush()

    def flush(self) -> Path | None:
        if not self._buffer:
            return None
        table = pa.Table.from_pylist(self._buffer, schema=self.schema)
        final = self.folder / f"train-{self.run_id}-{self.worker:05d}-{self._next_index:05d}.parquet"
        temporary = self.folder / f".{final.name}.tmp"
        with temporary.open("wb") as handle:
            pq.write_table(table, handle, compression="zstd")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, final)
        self.written.append(final)
        self.rows_written += table.num_rows
        self._next_index += 1
        rows, self._buffer = self._buffer, []
        self._buffered_bytes = 0
        if self.on_shard is not None:
            self.on_shard(final, rows)
        return final

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def run_shards(folder: Path, run_id: str) -> list[Path]:
    """The complete shards of one run in a config folder (temporaries are hidden and never matched)."""
    return sorted(Path(folder).glob(f"train-{run_id}-*.parquet"))


def read_columns(shards: Iterable[Path], columns: list[str]) -> pa.Table:
    tables = [pq.read_table(shard, columns=columns) for shard in shards]
    if not tables:
        return pa.table({name: pa.array([], type=ATTEMPT_SCHEMA.field(name).type) for name in columns})
    return pa.concat_tables(tables)
