"""The CPU the collector spends per span after storing it, stage by stage, against the decoding that precedes it.

    python bench/bench_assembly.py [--requests 200] [--rounds 3] [--scoring on|off]

On the ingest benchmark's load (the recorded fixtures with 7-13 spans a trace, fresh ids and times, ~512 spans a
request), in this one process, with the assembler process's garbage-collector settings, it times:

  decode      the OTLP decoder alone (what the bare receiver of bench_ingest does for each span)
  ingest      ``decode_request``: the decoder, the Arrow rows and the marks (the decode worker's work)
  read        completed traces read back: DuckDB-shaped Arrow rows -> records (the assembler's side of a read)
  reconstruct ``reconstruct`` on each completed trace
  score       the scoring stage (tool correctness in three modes against an expectation matching every run, the
              error detectors, the write-back of scores), with ``--scoring on``
  rows        the agent_runs / tool_calls / evaluations rows (``build_batches``)

and prints µs per span (process CPU time, best round) and each stage's cost relative to ``decode``. The sum of
read..rows is what the assembler process needs per span; decode is the bare receiver's whole per-span work.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scoring", choices=("on", "off"), default="on")
    args = parser.parse_args()

    import duckdb
    from bench_ingest import RequestFactory

    from agentotel_eval.otlp import decode
    from agentotel_eval.reconstruct import reconstruct
    from agentotel_eval.store.reader import group_by_trace
    from agentotel_eval.store.rows import SPAN_SELECT_ASSEMBLY, spans_from_arrow
    from collector.config import default_config
    from collector.decoding import decode_request
    from collector.pipeline import CompletedTrace
    from collector.run_writer import build_batches
    from collector.scoring import ScoringStage
    from collector.scoring_config import parse_expectations

    factory = RequestFactory(1, 512)
    bodies = [factory.next()[0] for _ in range(args.requests)]
    spans_total = sum(len(decode("traces", "protobuf", b).records) for b in bodies)
    config = dataclasses.replace(default_config(), expectations=parse_expectations(
        [{"name": "every run", "expected_tools": ["get_weather", "search_flights", "book_hotel"]}]))
    gc.set_threshold(50_000, *gc.get_threshold()[1:])  # as the collector's processes run
    gc.collect()
    gc.freeze()

    # Rows shaped as the read-back query returns them: the Arrow rows DuckDB would store, selected as assembly does.
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

    def stages() -> dict[str, float]:
        clock = time.process_time
        t: dict[str, float] = dict.fromkeys(("decode", "ingest", "read", "reconstruct", "score", "rows"), 0.0)
        sink = Collect()
        scoring = ScoringStage(sink, config.scoring_config())
        for body, table in zip(bodies, tables, strict=True):
            a = clock()
            decode("traces", "protobuf", body)
            b = clock()
            decode_request("traces", "protobuf", body)
            c = clock()
            records = spans_from_arrow(table)
            ids = {s.trace_id for s in records}
            stored = group_by_trace(ids, records, [])
            d = clock()
            completed = []
            for tid, trace in stored.items():
                spans = sorted(trace.spans, key=lambda s: (s.start_ns, s.span_id))
                completed.append(CompletedTrace(tid, tuple(spans), (), tuple(reconstruct(spans, [])), "quiet", True,
                                                False, spans[0].start_ns, max(s.end_ns for s in spans)))
            e = clock()
            if args.scoring == "on":
                sink.out = []
                scoring.consume(completed)
                completed = sink.out
            f = clock()
            build_batches(completed, time.time_ns())
            g = clock()
            for key, value in zip(t, (b - a, c - b, d - c, e - d, f - e, g - f), strict=True):
                t[key] += value
        return t

    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for key, value in stages().items():
            best[key] = min(best.get(key, value), value)
    per = {k: v / spans_total * 1e6 for k, v in best.items()}
    print(f"{spans_total:,} spans in {args.requests} requests, best of {args.rounds} rounds, scoring {args.scoring}")
    for key, us in per.items():
        print(f"  {key:12s} {us:7.2f} µs/span   {us / per['decode']:5.2f} x decode")
    after = sum(per[k] for k in ("read", "reconstruct", "score", "rows"))
    print(f"  assembler process total (read..rows): {after:.2f} µs/span = {after / per['decode']:.2f} x decode")


if __name__ == "__main__":
    main()
