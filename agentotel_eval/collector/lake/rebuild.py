"""Rebuild traces from the lake's spans and append the new builds to it: ``agentotel-eval rescore --lake``
(history over every node, split between workers with ``--shard k/n``) and the reconciler of
traces two nodes stored.

The same ``Rescorer`` as on one node's file reads through the lake's sealed reader (the latest rows of every
node) and scores with the same stage; what it would write to a file is appended to the lake instead, as a
newer build of each trace: its runs, calls and scores in one lake transaction, stamped with one commit time
and the writer's name. The latest views then show that build in place of the nodes' own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agentotel_eval.collector.pipeline.rescore import (
    RescoreError,
    Rescorer,
    RescoreRequest,
    RescoreSummary,
    request_from_payload,
    sealed_read,
)
from agentotel_eval.collector.store.operations import ReplaceRuns
from agentotel_eval.collector.store.reader import TraceReader
from agentotel_eval.store import lake

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from agentotel_eval.collector.config import CollectorConfig


class LakeBuilds:
    """A ``Rescorer``'s write: each operation's runs, calls and scores appended to the lake in one
    transaction, with one commit stamp, under the writer's name (``node``). Span attribute updates stay out:
    the lake keeps spans as they arrived, and the scores are in ``evaluations``."""

    def __init__(self, con: duckdb.DuckDBPyConnection, node: str, settings: lake.LakeSettings) -> None:
        self._con = con
        self.node = node
        self._settings = settings
        self.rows = 0

    def __call__(self, op: ReplaceRuns) -> None:
        import duckdb

        now = datetime.now(UTC)
        stamp = {"committed_at": now, "node": self.node, "flushed_at": now}
        con = self._con
        con.execute("BEGIN")
        try:
            n = lake.append(con, "agent_runs", op.runs, stamp) + lake.append(
                con, "tool_calls", op.calls, stamp
            )
            if op.evaluations is not None:
                n += lake.append(con, "evaluations", op.evaluations, stamp)
            con.execute("COMMIT")
        except (
            duckdb.Error
        ) as exc:  # the catalog's server or S3 refused (a privilege, an outage): said plainly
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")
            raise lake.LakeError(
                self._settings.scrub(f"cannot write builds to the lake: {lake.explain(exc)}")
            ) from None
        except BaseException:
            con.execute("ROLLBACK")
            raise
        self.rows += n


class LakeRebuilder:
    """A sealed reader and a writer over one lake, and a ``Rescorer`` between them;
    ``close`` detaches both."""

    def __init__(
        self, settings: lake.LakeSettings, config: CollectorConfig, node: str, *, config_name: str = ""
    ) -> None:
        self._reader = lake.open_reader(settings)
        try:
            self._writer = lake.open_writer(settings)
            try:
                missing = [
                    t
                    for t in lake.TABLES
                    if not self._writer.execute(
                        "SELECT count(*) FROM duckdb_tables() WHERE database_name = ? AND table_name = ?",
                        [lake.LAKE, t],
                    ).fetchone()[0]  # type: ignore[index]
                ]
                if missing:
                    raise RescoreError(
                        f"the lake has no {', '.join(missing)} table yet: no node has written to it"
                    )
                lake.check_privileges(self._writer, settings, write=True, who=node)
            except BaseException:
                self._writer.close()
                raise
        except BaseException:
            self._reader.close()
            raise
        self.builds = LakeBuilds(self._writer, node, settings)
        self._rescorer = Rescorer(
            config.scoring_config(),
            sealed_read(self._cursor),
            TraceReader(self._cursor),
            self.builds,
            conventions=config.conventions,
            text_failures=config.reconstruction.text_failures,
            config_name=config_name,
        )

    @contextlib.contextmanager
    def _cursor(self) -> Iterator[Any]:
        cur = self._reader.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def run(self, request: RescoreRequest) -> RescoreSummary:
        if request.judge:
            raise RescoreError("--judge is not available over the lake: a node's judge answers its own runs")
        return self._rescorer.run(request)

    def read(self, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
        """Rows of SQL over the lake's raw tables (``lake.spans``, ...) and latest views,
        through the reader."""
        with self._cursor() as cur:
            return cur.execute(sql, params or []).fetchall()

    def arrow(self, sql: str, params: list[Any] | None = None) -> pa.Table:
        """``read``'s rows as Arrow (many rows, kept out of Python objects)."""
        with self._cursor() as cur:
            return cur.execute(sql, params or []).to_arrow_table()

    def read_with(self, name: str, table: pa.Table, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        """``read`` with ``table`` (Arrow) visible to the SQL as ``name``."""
        with self._cursor() as cur:
            cur.register(name, table)
            try:
                return cur.execute(sql, params).fetchall()
            finally:
                cur.unregister(name)

    def close(self) -> None:
        self._writer.close()
        self._reader.close()


def rescore_lake(
    settings: lake.LakeSettings, payload: Any, config: CollectorConfig, *, node: str
) -> RescoreSummary:
    """``agentotel-eval rescore --lake``: the re-score a ``POST /v1/rescore`` body asks for, over every node's
    traces in the lake, written back to it as newer builds under ``node``. ``RescoreError`` when refused;
    ``lake.LakeError`` when the lake cannot be used."""
    request, config_path = request_from_payload(payload)
    rebuilder = LakeRebuilder(
        settings,
        config,
        node,
        config_name=config_path or "no config (expected tools from the runs' spans only)",
    )
    try:
        return rebuilder.run(request)
    finally:
        rebuilder.close()
