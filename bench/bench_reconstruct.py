"""Reconstruction throughput against the decoding it follows, in the same process.

Replays every recorded fixture (tests/fixtures/traces/*.pb and .logs.pb) many times and times three stages:
  1. parse    - ExportTraceServiceRequest.ParseFromString only (the floor: protobuf in C)
  2. decode   - agentotel_eval.otlp.decode -> SpanRecord/LogRecord (what the collector does per request)
  3. rebuild  - agentotel_eval.reconstruct.reconstruct over the decoded records, trace by trace
plus a long synthetic run (one agent, many turns, growing history) to show the cost stays linear in spans.
Prints spans/s per stage (process CPU time, best of N) and the ratio rebuild/decode (target: < 1).
Run: python bench/bench_reconstruct.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agentotel_eval.otlp import decode
from agentotel_eval.otlp.encode import encode_traces
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct import reconstruct

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "traces"


def _load() -> list[tuple[bytes, bytes | None]]:
    out = []
    for line in (FIXTURES / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        stem = entry["file"].removesuffix(".json")
        logs = FIXTURES / f"{stem}.logs.pb"
        out.append(((FIXTURES / entry["pb_file"]).read_bytes(), logs.read_bytes() if logs.exists() else None))
    return out


def _interleaved(stages: dict, repeat: int) -> dict[str, list[float]]:
    """Each stage timed ``repeat`` times in process CPU time, the stages taking turns, so a load spike on the
    shared machine hits all of them alike; the minimum of each is the least noisy estimate."""
    times: dict[str, list[float]] = {name: [] for name in stages}
    for _ in range(repeat):
        for name, fn in stages.items():
            start = time.process_time()  # CPU time of this process: other helpers' load does not count
            fn()
            times[name].append(time.process_time() - start)
    return times


def _synthetic_long_run(turns: int) -> bytes:
    """One invoke_agent run: `turns` chat spans (history grows each turn) + one execute_tool span per turn."""
    trace = "ab" * 16
    root = SpanRecord(trace, "f" * 16, None, "invoke_agent a", 1, 0, 10**12, attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    spans = [root]
    history: list[dict] = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    t = 1
    for i in range(turns):
        call = {"type": "tool_call", "id": f"c{i}", "name": "get_weather", "arguments": json.dumps({"city": f"C{i}"})}
        spans.append(SpanRecord(trace, f"{2 * i + 1:016x}", root.span_id, "chat m", 3, t, t + 5, attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
            "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}}}}]),
        }))
        spans.append(SpanRecord(trace, f"{2 * i + 2:016x}", root.span_id, "execute_tool get_weather", 1, t + 6, t + 8,
                                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                                            "gen_ai.tool.call.id": f"c{i}", "gen_ai.tool.call.arguments": call["arguments"],
                                            "gen_ai.tool.call.result": f"C{i}: sunny"}))
        history += [{"role": "assistant", "parts": [call]},
                    {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{i}", "response": f"C{i}: sunny"}]}]
        t += 10
    return encode_traces(spans).SerializeToString()


def _stages(bodies: list[tuple[bytes, bytes | None]], loops: int, repeat: int) -> dict[str, float]:
    decoded = [(decode("traces", "protobuf", t).records, decode("logs", "protobuf", lg).records if lg else [])
               for t, lg in bodies]
    n_spans = sum(len(s) for s, _ in decoded) * loops

    def parse():
        for _ in range(loops):
            for t, lg in bodies:
                ExportTraceServiceRequest().ParseFromString(t)
                if lg:
                    ExportLogsServiceRequest().ParseFromString(lg)

    def decode_all():
        for _ in range(loops):
            for t, lg in bodies:
                decode("traces", "protobuf", t)
                if lg:
                    decode("logs", "protobuf", lg)

    def rebuild():
        for _ in range(loops):
            for spans, logs in decoded:
                reconstruct(spans, logs)

    out: dict[str, float] = {"spans": n_spans}
    for name, times in _interleaved({"parse": parse, "decode": decode_all, "rebuild": rebuild}, repeat).items():
        out[name], out[name + "_median"] = min(times), statistics.median(times)
    return out


def _report(title: str, r: dict[str, float]) -> None:
    print(f"\n{title}: {r['spans']:,} spans per pass (best of N; median in brackets)")
    for name in ("parse", "decode", "rebuild"):
        print(f"  {name:8s} {r[name]:8.3f} s  [{r[name + '_median']:.3f}]  {r['spans'] / r[name]:>12,.0f} spans/s")
    print(f"  rebuild / decode = {r['rebuild'] / r['decode']:.2f}   rebuild / parse = {r['rebuild'] / r['parse']:.2f}"
          f"   decode + rebuild = {(r['decode'] + r['rebuild']) / r['decode']:.2f} x decode")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=40, help="replays of the whole fixture set per timing")
    parser.add_argument("--repeat", type=int, default=5, help="timings per stage (best is reported)")
    parser.add_argument("--turns", type=int, default=300, help="turns of the synthetic long run")
    args = parser.parse_args()
    _report(f"49 real fixtures x {args.loops}", _stages(_load(), args.loops, args.repeat))
    long_body = _synthetic_long_run(args.turns)
    _report(f"synthetic run, {args.turns} turns (history grows)", _stages([(long_body, None)], 3, args.repeat))
    half = decode("traces", "protobuf", _synthetic_long_run(args.turns // 2)).records
    full = decode("traces", "protobuf", long_body).records
    times = _interleaved({"half": lambda: reconstruct(half), "full": lambda: reconstruct(full)}, args.repeat * 3)
    ratio = min(times["full"]) / min(times["half"])
    print(f"\nscaling: rebuild({args.turns} turns) / rebuild({args.turns // 2} turns) = {ratio:.2f} (2.0 = linear)")


if __name__ == "__main__":
    main()
