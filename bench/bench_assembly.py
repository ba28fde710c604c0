"""The CPU the collector spends per span after storing it, stage by stage, against the
decoding that precedes it.

    python bench/bench_assembly.py [--requests 200] [--rounds 3] [--scoring on|off]
                                   [--expectations flat|trajectory|both] [--compare-expectations]
                                   [--source DIR]

On the ingest benchmark's load (the recorded fixtures with 7-13 spans a trace, fresh ids and times, ~512 spans
a request), in this one process, with the assembler process's garbage-collector settings, it times:

  decode      the OTLP decoder alone (what the bare receiver of bench_ingest does for each span)
  ingest      ``decode_request``: the decoder, the Arrow rows and the marks (the decode worker's work)
  read        completed traces read back: DuckDB-shaped Arrow rows -> records (the assembler's side of a read)
  reconstruct ``reconstruct`` on each completed trace
  score       the scoring stage (tool correctness in three modes against an expectation matching every run,
              the error detectors, the write-back of scores), with ``--scoring on``; ``--expectations
              trajectory`` gives every run a trajectory spec instead of the flat list (``both``: the two,
              so both metrics run)
  rows        the agent_runs / tool_calls / evaluations rows (``build_batches``)

and, in a DuckDB file opened with the writer's settings, what the collector's process does with them:

  store       the idempotent append and its commit, as the writer does it (commits of 4
              requests, ~2,000 spans)
  select      reading each commit's traces back by its ``ingested_at`` (``TraceReader.load_tables``)
  write runs  the runs' rows applied and committed (``ReplaceRuns``, one transaction a commit's traces)

It prints µs per span (process CPU time, DuckDB's threads included, best round) and each stage's cost relative
to ``decode``. ``--compare-expectations`` times the in-process stages with the flat list and with the chosen
expectations alternately, round by round, and prints the scoring stage's and the assembler's ratio. ``--source
DIR`` times another checkout's ``agentotel_eval`` under this checkout's load (run it alternately with this
one). The sum of read..rows is what the assembler process needs per span; decode is the bare receiver's whole
per-span work. The sum of every stage but ``decode`` (which ``ingest`` includes) is the work itself, with
nothing for moving it between processes, for the receivers, or for the exporters: a floor under the
collector's CPU a span.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import sys
import tempfile
import time
from pathlib import Path

#: requests a commit holds (under load the writer commits ~2,000 spans at a time)
COMMIT_REQUESTS = 4
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scoring", choices=("on", "off"), default="on")
    parser.add_argument("--expectations", choices=tuple(EXPECTATIONS), default="flat")
    parser.add_argument("--compare-expectations", action="store_true")
    parser.add_argument("--source", type=Path, help="another checkout whose agentotel_eval to time")
    args = parser.parse_args()
    from source import imported_from, use_source

    print(f"agentotel_eval from {use_source(args.source) if args.source else imported_from()}")

    import duckdb
    from bench_ingest import RequestFactory
    from source import first_module

    from agentotel_eval.collector.config import default_config
    from agentotel_eval.collector.decode.batch import decode_request
    from agentotel_eval.collector.score.stage import ScoringStage
    from agentotel_eval.collector.store.idempotent_append import SPAN_KEY, InsertPlan
    from agentotel_eval.collector.store.operations import merge_operations
    from agentotel_eval.collector.store.reader import TraceReader, group_by_trace
    from agentotel_eval.collector.store.runs import build_batches
    from agentotel_eval.otlp import decode
    from agentotel_eval.reconstruct import reconstruct
    from agentotel_eval.store import schema
    from agentotel_eval.store.opening import open_store
    from agentotel_eval.store.rows import SPAN_SCHEMA, SPAN_SELECT_ASSEMBLY, spans_from_arrow

    # before the collector's restructuring (``--source``) these lived in the score and assemble packages
    parse_expectations = first_module(
        "agentotel_eval.collector.config_scoring", "agentotel_eval.collector.score.config"
    ).parse_expectations
    CompletedTrace = first_module(
        "agentotel_eval.collector.process.completed", "agentotel_eval.collector.assemble.completed"
    ).CompletedTrace

    factory = RequestFactory(1, 512)
    bodies = [factory.next()[0] for _ in range(args.requests)]
    spans_total = sum(len(decode("traces", "protobuf", b).records) for b in bodies)
    config = dataclasses.replace(
        default_config(),
        expectations=parse_expectations([{"name": "every run", **EXPECTATIONS[args.expectations]}]),
    )
    flat = dataclasses.replace(
        config, expectations=parse_expectations([{"name": "every run", **EXPECTATIONS["flat"]}])
    )
    gc.set_threshold(50_000, *gc.get_threshold()[1:])  # as the collector's processes run
    gc.collect()
    gc.freeze()

    # Rows shaped as the read-back query returns them: the Arrow rows DuckDB would store,
    # selected as assembly does.
    con = duckdb.connect()
    batches = [decode_request("traces", "protobuf", b).rows for b in bodies]
    tables = []
    for rows in batches:
        con.register("request", rows)
        tables.append(con.sql(f"SELECT {SPAN_SELECT_ASSEMBLY} FROM request").to_arrow_table())
        con.unregister("request")

    class Collect:
        def __init__(self) -> None:
            self.out: list = []

        def start(self) -> None: ...

        def shutdown(self) -> None: ...

        def consume(self, traces) -> None:
            self.out.extend(traces)

    sink = Collect()
    scoring = ScoringStage(sink, config.scoring_config())
    scorings = {"flat": ScoringStage(sink, flat.scoring_config()), args.expectations: scoring}

    def read(table):
        records = spans_from_arrow(table)
        return group_by_trace({s.trace_id for s in records}, records, [])

    def complete(stored) -> list:
        completed = []
        for tid, trace in stored.items():
            spans = sorted(trace.spans, key=lambda s: (s.start_ns, s.span_id))
            completed.append(
                CompletedTrace(
                    tid,
                    tuple(spans),
                    (),
                    tuple(reconstruct(spans, [])),
                    "quiet",
                    True,
                    False,
                    spans[0].start_ns,
                    max(s.end_ns for s in spans),
                )
            )
        return completed

    nonlocal_scoring = [scoring]  # the stage ``score`` uses: switched per round by --compare-expectations

    def score(completed: list) -> list:
        if args.scoring != "on":
            return completed
        sink.out = []
        nonlocal_scoring[0].consume(completed)
        return sink.out

    def stages(scoring: ScoringStage = scoring) -> dict[str, float]:
        clock = time.process_time
        nonlocal_scoring[0] = scoring
        t: dict[str, float] = dict.fromkeys(("decode", "ingest", "read", "reconstruct", "score", "rows"), 0.0)
        for body, table in zip(bodies, tables, strict=True):
            a = clock()
            decode("traces", "protobuf", body)
            b = clock()
            decode_request("traces", "protobuf", body)
            c = clock()
            stored = read(table)
            d = clock()
            completed = complete(stored)
            e = clock()
            completed = score(completed)
            f = clock()
            build_batches(completed, time.time_ns())
            g = clock()
            for key, value in zip(t, (b - a, c - b, d - c, e - d, f - e, g - f), strict=True):
                t[key] += value
        return t

    # Each request's run rows for the write stage, built once before the timed rounds: kept during a round
    # they would grow the heap under the stages timed, and slowed ``ingest`` by half with scoring.
    run_rows = [build_batches(score(complete(read(table))), time.time_ns())[0] for table in tables]

    def database_stages(path: Path) -> dict[str, float]:
        clock = time.process_time
        t: dict[str, float] = dict.fromkeys(("store", "select", "write runs"), 0.0)
        con = open_store(
            path, settings=config.writer.duckdb_settings(), row_group_size=config.writer.row_group_size
        )
        reader = TraceReader(con.cursor)
        try:
            for i in range(0, len(batches), COMMIT_REQUESTS):
                a = clock()
                plan = InsertPlan(
                    schema.SPANS,
                    SPAN_SCHEMA,
                    schema.SPAN_COLUMNS,
                    batches[i : i + COMMIT_REQUESTS],
                    SPAN_KEY,
                    "start_time",
                )
                committed = time.time_ns()
                con.register(plan.view, plan.data)
                con.execute("BEGIN")
                plan.execute(con, committed)
                con.execute("COMMIT")
                con.unregister(plan.view)
                b = clock()
                ids = plan.data.column("trace_id").unique().to_pylist()
                reader.load_tables(ids, 0, 0, whole=False, commits=[committed])
                c = clock()
                # merged into one statement a table, as the writer's operations thread applies queued runs
                con.execute("BEGIN")
                for op in merge_operations(
                    [rows.operation() for group in run_rows[i : i + COMMIT_REQUESTS] for rows in group]
                ):
                    op.apply(con)
                con.execute("COMMIT")
                d = clock()
                for key, value in zip(t, (b - a, c - b, d - c), strict=True):
                    t[key] += value
        finally:
            con.close()
        return t

    if args.compare_expectations:
        compare(args, scorings, stages, spans_total)
        return

    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.rounds):
            measured = {**stages(), **database_stages(Path(tmp) / f"round{n}.duckdb")}
            for key, value in measured.items():
                best[key] = min(best.get(key, value), value)
    per = {k: v / spans_total * 1e6 for k, v in best.items()}
    print(
        f"{spans_total:,} spans in {args.requests} requests, best of {args.rounds} rounds, "
        f"scoring {args.scoring}"
    )
    for key, us in per.items():
        print(f"  {key:12s} {us:7.2f} µs/span   {us / per['decode']:5.2f} x decode")
    after = sum(per[k] for k in ("read", "reconstruct", "score", "rows"))
    print(
        f"  assembler process total (read..rows): {after:.2f} µs/span = {after / per['decode']:.2f} x decode"
    )
    floor = sum(us for key, us in per.items() if key != "decode")
    print(
        f"  every stage but decode (the work alone, nothing for the transport between processes): "
        f"{floor:.2f} µs/span = {floor / per['decode']:.2f} x decode"
    )


def compare(args: argparse.Namespace, scorings: dict, stages, spans_total: int) -> None:  # type: ignore[no-untyped-def]
    """The in-process stages with the flat list and with ``--expectations``, alternately,
    best round of each."""
    best: dict[str, dict[str, float]] = {name: {} for name in scorings}
    for _ in range(args.rounds):
        for name, scoring in scorings.items():
            for key, value in stages(scoring).items():
                best[name][key] = min(best[name].get(key, value), value)
    print(f"{spans_total:,} spans in {args.requests} requests, best of {args.rounds} alternating rounds")
    totals = {}
    for name, t in best.items():
        per = {k: v / spans_total * 1e6 for k, v in t.items()}
        totals[name] = (per["score"], sum(per[k] for k in ("read", "reconstruct", "score", "rows")))
        print(
            f"  {name:10s} score {totals[name][0]:6.2f} µs/span   assembler (read..rows) "
            f"{totals[name][1]:6.2f} µs/span"
        )
    if args.expectations != "flat":
        (flat_score, flat_total), (score, total) = totals["flat"], totals[args.expectations]
        print(
            f"  throughput {args.expectations} / flat: scoring stage {flat_score / score:.2f}x, "
            f"assembler process {flat_total / total:.2f}x"
        )


#: the expectation every run gets: the flat list of today, or a trajectory spec over the same
#: tools with matchers
EXPECTATIONS: dict[str, dict] = {
    "flat": {"expected_tools": ["get_weather", "search_flights", "book_hotel"]},
    "trajectory": {
        "trajectory": {
            "extra": "penalize",
            "max_calls": 20,
            "forbid": [{"tool": "delete_booking"}],
            "steps": [
                {
                    "id": "weather",
                    "tool": "get_weather",
                    "args": {"city": {"$type": "string", "$regex": "[A-Z].*"}},
                },
                {
                    "unordered": [
                        {"tool": "search_flights", "args": {"destination": {"$any": True}}},
                        {"tool": "search_hotels", "optional": True},
                    ]
                },
                {
                    "tool": "book_hotel",
                    "args": {"nights": {"$gte": 1, "$lte": 30}},
                    "count": {"min": 1, "max": 2},
                },
            ],
        }
    },
}
EXPECTATIONS["both"] = {**EXPECTATIONS["flat"], **EXPECTATIONS["trajectory"]}


if __name__ == "__main__":
    main()
