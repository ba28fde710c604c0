"""What reading a trace back from the shared lake costs, as the lake grows: the basis for reconciling split
traces after the fact instead of reading every trace's other spans from the lake before assembling it.

    python bench/bench_lake_reads.py [--spans 200000,1000000] [--flushes 50] [--lookups 20]

Needs the ``[lake]`` extra, PostgreSQL's server programs (Debian's ``postgresql``) and ``moto[server]``: it
starts both on loopback. For each lake size it appends that many spans (10 a trace, from 2 nodes, in
``--flushes`` flushes as nodes do, each flush its own Parquet files), then times, each ``--lookups`` times:

* ``lookup 100``: the spans of 100 traces by id (what a node would read before assembling a batch of traces);
* ``lookup 100, recent``: the same bounded to the last five minutes' flushes (``flushed_at``), which the
  files' statistics can prune;
* ``reconciler look``: the reconciler's search for split traces among the spans of the newest flush.

The flushes are spread evenly over the last ``--hours``: a lake of that much history.

Printed: median and p95 milliseconds per read, per lake size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def build(con, node_names: list[str], total: int, flushes: int, hours: float) -> list[str]:
    """``total`` spans, 10 a trace with random ids (as real trace ids are: no file's id range prunes a
    lookup), appended in ``flushes`` lake transactions spread evenly over the last ``hours`` and alternating
    between the nodes; returns the trace ids."""
    import random

    import pyarrow as pa

    from agentotel_eval.store import lake

    rng = random.Random(7)
    per = total // flushes
    traces: list[str] = []
    now = datetime.now(UTC)
    for f in range(flushes):
        ids = [tid for tid in (f"{rng.getrandbits(128):032x}" for _ in range(per // 10)) for _ in range(10)]
        traces.extend(ids[::10])
        start = now - timedelta(hours=hours) * (flushes - f) / flushes
        rows = pa.table(
            {
                "trace_id": ids,
                "span_id": [f"{rng.getrandbits(64):016x}" for _ in ids],
                "name": ["execute_tool search"] * len(ids),
                "start_time": [start] * len(ids),
                "attributes": ['{"gen_ai.tool.name": "search"}'] * len(ids),
                "start_time_unix_nano": [int(start.timestamp() * 1e9)] * len(ids),
                "ingested_at": [start] * len(ids),
            }
        )
        con.execute("BEGIN")
        lake.append(con, "spans", rows, {"node": node_names[f % len(node_names)], "flushed_at": start})
        con.execute("COMMIT")
    return traces


def timed(con, sql: str, params: list, n: int) -> tuple[float, float]:
    took = []
    for _ in range(n):
        started = time.perf_counter()
        con.execute(sql, params).fetchall()
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return statistics.median(took), took[int(0.95 * (len(took) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--spans", default="200000,1000000")
    parser.add_argument("--flushes", type=int, default=50)
    parser.add_argument("--lookups", type=int, default=20)
    parser.add_argument(
        "--hours", type=float, default=2.0, help="the flushes spread over this long (default 2)"
    )
    args = parser.parse_args()

    import duckdb

    from agentotel_eval.collector.config import default_config
    from agentotel_eval.collector.lake.reconciler import Reconciler
    from agentotel_eval.store import lake
    from agentotel_eval.store.schema import migrate
    from tests.support.lake_servers import running_postgres, running_s3

    local = duckdb.connect()
    migrate(local)
    schema = lake.node_schema(local)
    print(f"DuckDB {duckdb.__version__}; PostgreSQL catalog, moto S3 data, on loopback")
    with running_postgres() as pg, running_s3() as s3:
        for size in (int(s) for s in args.spans.split(",")):
            name = f"bench{size}"
            s3.create_bucket(name)
            settings = lake.LakeSettings(
                pg.create_database(name),
                f"s3://{name}/data/",
                lake.S3Settings(s3.endpoint, "test", "test", "us-east-1", "path", False),
            )
            writer = lake.open_writer(settings, schema)
            started = time.perf_counter()
            traces = build(writer, ["a", "b"], size, args.flushes, args.hours)
            built = time.perf_counter() - started
            writer.close()
            reader = lake.open_reader(settings)
            batch = traces[-100:]
            listed = ", ".join("?" for _ in batch)
            lookup = timed(
                reader, f"SELECT * FROM lake.spans WHERE trace_id IN ({listed})", batch, args.lookups
            )
            recent = timed(
                reader,
                f"SELECT * FROM lake.spans WHERE flushed_at > now() - INTERVAL 5 MINUTE AND "
                f"trace_id IN ({listed})",
                batch,
                args.lookups,
            )
            reconciler = Reconciler(
                settings, default_config(), "a", interval=60, quiet=5, live_for=60, away=20
            )
            reconciler.open()
            # a steady look: the spans of the last flush interval (the newest flush), and each
            # trace's other spans
            look_since = datetime.now(UTC) - timedelta(hours=args.hours) / args.flushes * 1.5
            look = []
            for _ in range(args.lookups):
                t0 = time.perf_counter()
                reconciler.split_traces(look_since)
                look.append((time.perf_counter() - t0) * 1000)
            look.sort()
            reconciler.close()
            reader.close()
            print(f"{size:>9,} spans ({built:.1f}s to append in {args.flushes} flushes):")
            for label, (p50, p95) in (
                ("lookup 100", lookup),
                ("lookup 100, recent", recent),
                ("reconciler look", (statistics.median(look), look[int(0.95 * (len(look) - 1))])),
            ):
                print(f"  {label:<22} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")


if __name__ == "__main__":
    main()
