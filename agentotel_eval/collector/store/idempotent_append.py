"""Idempotent Arrow appends: a record already stored is not stored again.

Spans are idempotent on ``(trace_id, span_id)`` and logs on their content hash: the insert is an anti-join
against rows inside the batch's time window (a re-sent record has the same time), which lets DuckDB skip all
row groups outside the window by their min/max statistics, so appends stay fast as the table grows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from agentotel_eval.collector.store.operations import ns_to_datetime

if TYPE_CHECKING:
    import duckdb

SPAN_KEY = ("trace_id", "span_id")
LOG_KEY = ("log_id",)

#: what ``InsertPlan.execute`` returns: rows offered, and the keys inserted (None: every row was new)
Outcome = tuple[int, set[tuple[str, ...]] | None]


class InsertPlan:
    """One idempotent append: rows whose key is already stored in the batch's time window are skipped."""

    def __init__(
        self,
        table: str,
        arrow_schema: pa.Schema,
        columns: Sequence[str],
        batches: list[pa.RecordBatch],
        key: tuple[str, ...],
        time_column: str,
    ) -> None:
        self.table = table
        self.view = f"_ingest_{table}"
        self.data = pa.Table.from_batches(batches, schema=arrow_schema)
        self.columns = columns
        self.key = key
        self.time_column = time_column

    def execute(self, con: duckdb.DuckDBPyConnection, ingested_ns: int) -> Outcome:
        """Returns (rows offered, keys inserted); the key set is None when every row was new (the common case,
        decided by count, without building the set). Every row is stamped
        ``ingested_at`` = ``ingested_ns``."""
        data = self.data
        total = data.num_rows
        times = data.column(self.time_column).cast(pa.int64())
        # A record sent with no time is stored at the epoch: it is probed there apart, as the window stretched
        # back to 1970 would make the check scan every row group of the table
        zero = pc.equal(times, 0)
        timeless = pc.any(zero).as_py() or False
        bounds = pc.min_max(pc.if_else(zero, None, times) if timeless else times).as_py()
        lo = None if bounds["min"] is None else ns_to_datetime(bounds["min"])
        hi = None if bounds["max"] is None else ns_to_datetime(bounds["max"], ceil=True)
        window = f"s.{self.time_column} BETWEEN $lo AND $hi"
        params: dict[str, object] = {"lo": lo, "hi": hi, "ingested": ns_to_datetime(ingested_ns)}
        if timeless:
            window = f"({window} OR s.{self.time_column} = $epoch)"
            params["epoch"] = ns_to_datetime(0)
        cols = ", ".join(self.columns)
        on = " AND ".join(f"s.{k} = b.{k}" for k in self.key)
        key = ", ".join(self.key)
        source = self.view
        if _has_duplicate_keys(data, self.key):  # rare (a retry racing its original): keep one copy of each
            source = f"(SELECT * FROM {self.view} QUALIFY row_number() OVER (PARTITION BY {key}) = 1)"
        # con.sql runs an INSERT at once and keeps its RETURNING rows; fetched as Arrow, not Python tuples.
        inserted = con.sql(
            f"""
            INSERT INTO {self.table} ({cols}, ingested_at)
            SELECT {cols}, $ingested FROM {source} b
            WHERE NOT EXISTS (
                SELECT 1 FROM {self.table} s WHERE {window} AND {on}
            )
            RETURNING {key}
            """,
            params=params,
        ).to_arrow_table()
        if inserted.num_rows == total:
            return total, None
        return total, set(zip(*(inserted.column(k).to_pylist() for k in self.key), strict=True))


def new_rows(
    batches: Sequence[pa.RecordBatch | None], outcome: Outcome | None, key: tuple[str, ...]
) -> list[list[int] | None]:
    """Per batch of one plan, the indices of its rows that were inserted: None for all of them, [] for none
    (or no batch). A second copy of a record, in the same batch or a later one, is a duplicate."""
    inserted = outcome[1] if outcome is not None else None
    out: list[list[int] | None] = []
    for batch in batches:
        if batch is None or not batch.num_rows:
            out.append([])
        elif inserted is None:
            out.append(None)
        else:
            new = []
            for i, k in enumerate(zip(*(batch.column(c).to_pylist() for c in key), strict=True)):
                if k in inserted:
                    inserted.discard(k)
                    new.append(i)
            out.append(new)
    return out


def _has_duplicate_keys(data: pa.Table, key: tuple[str, ...]) -> bool:
    column = (
        data.column(key[0])
        if len(key) == 1
        else pc.binary_join_element_wise(*(data.column(k) for k in key), "")
    )
    return pc.count_distinct(column).as_py() != data.num_rows
