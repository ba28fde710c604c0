"""Reconstruction throughput against the decoding it follows, in the same process.

Replays every recorded fixture (tests/fixtures/traces/*.pb and .logs.pb) many times and times three stages:
  1. parse    - ExportTraceServiceRequest.ParseFromString only (the floor: protobuf in C)
  2. decode   - agentotel_eval.otlp.decode -> SpanRecord/LogRecord (what the collector does per request)
  3. rebuild  - agentotel_eval.reconstruct.reconstruct over the decoded records, trace by trace
plus a long synthetic run (one agent, many turns, growing history) to show the cost stays linear in spans.
Prints spans/s per stage (process CPU time, best of N) and the ratio rebuild/decode (target: < 1).
Run: python bench/bench_reconstruct.py            (this checkout)
     python bench/bench_reconstruct.py --against ../old-checkout   (new / old ratio, alternating)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

# the checkout whose code is measured: ``--code DIR`` (read before the imports below), else this one
sys.path.insert(
    0,
    str(Path(sys.argv[sys.argv.index("--code") + 1]).resolve())
    if "--code" in sys.argv
    else str(Path(__file__).resolve().parents[1]),
)

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agentotel_eval.otlp import decode
from agentotel_eval.otlp.encode import encode_traces
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.reconstruct import reconstruct

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "traces"


def _load(fixtures: Path = FIXTURES) -> list[tuple[bytes, bytes | None]]:
    """Every fixture of a manifest (whichever code is measured, the same traces)."""
    out = []
    for line in (fixtures / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        stem = entry["file"].removesuffix(".json")
        logs = fixtures / f"{stem}.logs.pb"
        out.append(((fixtures / entry["pb_file"]).read_bytes(), logs.read_bytes() if logs.exists() else None))
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
    root = SpanRecord(
        trace,
        "f" * 16,
        None,
        "invoke_agent a",
        1,
        0,
        10**12,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
    )
    spans = [root]
    history: list[dict] = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    t = 1
    for i in range(turns):
        call = {
            "type": "tool_call",
            "id": f"c{i}",
            "name": "get_weather",
            "arguments": json.dumps({"city": f"C{i}"}),
        }
        spans.append(
            SpanRecord(
                trace,
                f"{2 * i + 1:016x}",
                root.span_id,
                "chat m",
                3,
                t,
                t + 5,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": json.dumps(history),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
                    "gen_ai.tool.definitions": json.dumps(
                        [
                            {
                                "type": "function",
                                "name": "get_weather",
                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                            }
                        ]
                    ),
                },
            )
        )
        spans.append(
            SpanRecord(
                trace,
                f"{2 * i + 2:016x}",
                root.span_id,
                "execute_tool get_weather",
                1,
                t + 6,
                t + 8,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.id": f"c{i}",
                    "gen_ai.tool.call.arguments": call["arguments"],
                    "gen_ai.tool.call.result": f"C{i}: sunny",
                },
            )
        )
        history += [
            {"role": "assistant", "parts": [call]},
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": f"c{i}", "response": f"C{i}: sunny"}],
            },
        ]
        t += 10
    return encode_traces(spans).SerializeToString()


def _stages(bodies: list[tuple[bytes, bytes | None]], loops: int, repeat: int) -> dict[str, float]:
    decoded = [
        (decode("traces", "protobuf", t).records, decode("logs", "protobuf", lg).records if lg else [])
        for t, lg in bodies
    ]
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
    for name, times in _interleaved(
        {"parse": parse, "decode": decode_all, "rebuild": rebuild}, repeat
    ).items():
        out[name], out[name + "_median"] = min(times), statistics.median(times)
    return out


def _report(title: str, r: dict[str, float]) -> None:
    print(f"\n{title}: {r['spans']:,} spans per pass (best of N; median in brackets)")
    for name in ("parse", "decode", "rebuild"):
        print(
            f"  {name:8s} {r[name]:8.3f} s  [{r[name + '_median']:.3f}]  "
            f"{r['spans'] / r[name]:>12,.0f} spans/s"
        )
    print(
        f"  rebuild / decode = {r['rebuild'] / r['decode']:.2f}   rebuild / parse = "
        f"{r['rebuild'] / r['parse']:.2f}   decode + rebuild = "
        f"{(r['decode'] + r['rebuild']) / r['decode']:.2f} x decode"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=40, help="replays of the whole fixture set per timing")
    parser.add_argument("--repeat", type=int, default=5, help="timings per stage (best is reported)")
    parser.add_argument("--turns", type=int, default=300, help="turns of the synthetic long run")
    parser.add_argument("--code", help="measure the code of this checkout (on this checkout's fixtures)")
    parser.add_argument(
        "--against",
        metavar="DIR",
        help="also measure the checkout DIR, alternating, and print "
        "the ratio of time per span (new / old), each normalised by its own decode time",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternations with --against")
    parser.add_argument(
        "--fixtures", type=Path, default=FIXTURES, help="a directory of fixtures with a manifest"
    )
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.against:
        _compare(args)
        return
    bodies = _load(args.fixtures)
    fixtures = _stages(bodies, args.loops, args.repeat)
    if args.json:
        print(json.dumps(fixtures))
        return
    _report(f"{len(bodies)} real fixtures x {args.loops}", fixtures)
    long_body = _synthetic_long_run(args.turns)
    _report(
        f"synthetic run, {args.turns} turns (history grows)", _stages([(long_body, None)], 3, args.repeat)
    )
    half = decode("traces", "protobuf", _synthetic_long_run(args.turns // 2)).records
    full = decode("traces", "protobuf", long_body).records
    times = _interleaved(
        {"half": lambda: reconstruct(half), "full": lambda: reconstruct(full)}, args.repeat * 3
    )
    ratio = min(times["full"]) / min(times["half"])
    print(
        f"\nscaling: rebuild({args.turns} turns) / rebuild({args.turns // 2} turns) = "
        f"{ratio:.2f} (2.0 = linear)"
    )


def _compare(args: argparse.Namespace) -> None:
    """This checkout against ``--against``, in alternating subprocesses on the same fixtures: rebuild time per
    span, and rebuild / decode (decode is the same code in both, so the ratio cancels the machine's drift)."""
    import subprocess

    script = str(Path(__file__).resolve())
    common = [
        "--loops",
        str(args.loops),
        "--repeat",
        str(args.repeat),
        "--fixtures",
        str(args.fixtures),
        "--json",
    ]
    runs: dict[str, list[dict[str, float]]] = {"new": [], "old": []}
    for _ in range(args.rounds):
        for label, code in (("old", args.against), ("new", str(Path(__file__).resolve().parents[1]))):
            out = subprocess.run(
                [sys.executable, script, "--code", code, *common], check=True, capture_output=True, text=True
            ).stdout
            runs[label].append(json.loads(out.strip().splitlines()[-1]))
    for label in ("old", "new"):
        per_span = [r["rebuild"] / r["spans"] * 1e6 for r in runs[label]]
        relative = [r["rebuild"] / r["decode"] for r in runs[label]]
        print(
            f"{label}: rebuild {statistics.median(per_span):.2f} µs/span (rounds: "
            f"{', '.join(f'{x:.2f}' for x in per_span)}), rebuild/decode {statistics.median(relative):.2f}"
        )
    ratio = statistics.median(r["rebuild"] / r["decode"] for r in runs["new"]) / statistics.median(
        r["rebuild"] / r["decode"] for r in runs["old"]
    )
    print(f"new / old time per span (each against its own decode) = {ratio:.2f}")


if __name__ == "__main__":
    main()
