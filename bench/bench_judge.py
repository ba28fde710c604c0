"""Judge throughput: N evaluations against the stub LLM answering after a fixed delay,
sequential vs concurrent.

    python bench/bench_judge.py [--n 200] [--delay 0.1] [--concurrency 32] [--repeat 3]
                                [--stub process|thread]

Every evaluation takes the product path: ToolsErrorMetric -> JudgeRunner (semaphore, retries) -> litellm ->
HTTP -> tests/support/llm_stub.py, cache off. Sequential awaits one evaluation after another; concurrent
gathers all N with ``max_concurrency``. Both run in the same process, after a warm-up (litellm import,
connections), and the speed-up is the ratio of their wall times; the ideal is n*delay /
(ceil(n/concurrency)*delay).

The stub runs in its own process by default, as a real provider would (in a thread it competes for our GIL).
For comparison the same is measured with a thin aiohttp ``CustomLLMClient`` (``direct``), which separates what
the runner's concurrency achieves from litellm's own CPU cost per call, and with a client that only sleeps
(``no-http``), which measures the metric and runner alone. CPU time per evaluation is reported,
because on a small shared machine CPU, not waiting, bounds the concurrent run. Last, the deterministic
detectors' throughput, which the collector pays on every agent run at ingest.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402  (litellm's own HTTP transport, so it is installed with it)

from agentotel_eval import EvalTestCase, ToolCall, ToolDefinition  # noqa: E402
from agentotel_eval.detectors import detect_and_observe  # noqa: E402
from agentotel_eval.judge.client import CustomLLMClient  # noqa: E402
from agentotel_eval.metrics.tool_errors import ToolsErrorMetric  # noqa: E402
from tests.support.llm_stub import LLMStub, Reply  # noqa: E402

ANSWER = {
    "detected": True,
    "confidence": 0.8,
    "reason": "booked before searching",
    "error_types": ["sequence_error"],
    "errors": [{"type": "sequence_error", "description": "#1 before #2"}],
    "error_severity": "medium",
}
TOOLS = [
    ToolDefinition(
        "search_flights",
        parameters={
            "type": "object",
            "required": ["from", "to"],
            "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
        },
    ),
    ToolDefinition(
        "book_flight",
        parameters={
            "type": "object",
            "required": ["flight_id"],
            "properties": {"flight_id": {"type": "string"}},
        },
    ),
]


def case(i: int) -> EvalTestCase:
    return EvalTestCase(
        input=f"Book the cheapest flight from Paris to New York (request {i}).",
        actual_output="Booked flight AF9.",
        tool_calls=[
            ToolCall("book_flight", {"flight_id": "AF9"}, status="ok", output={"confirmation": f"X{i}"}),
            ToolCall("search_flights", {"from": "PAR", "to": "NYC"}, status="ok", output=[{"id": "AF9"}]),
        ],
        available_tools=TOOLS,
    )


class DirectClient(CustomLLMClient):
    """A minimal OpenAI-compatible client: the baseline without litellm's per-call work.

    On aiohttp, litellm's own transport. (httpx's connection pool was tried first and measured: it re-scans
    every connection for every queued request, ~4,000 idle checks per request at 32 in flight, so it cost more
    CPU than litellm and hid what a thin client achieves.)
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http: aiohttp.ClientSession | None = None

    async def chat_complete(self, messages, temperature=0.0):
        if self.http is None:
            self.http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=60), connector=aiohttp.TCPConnector(limit=100)
            )
        async with self.http.post(
            f"{self.base_url}/chat/completions",
            json={"model": "gpt-4o-mini", "messages": list(messages), "temperature": temperature},
        ) as response:
            response.raise_for_status()
            body = await response.json()
        return body["choices"][0]["message"]["content"], None

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()

    def get_model_name(self) -> str:
        return "direct/gpt-4o-mini"


class SleepClient(CustomLLMClient):
    """No HTTP at all: waits ``delay`` and answers. Measures the metric and runner alone."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.text = json.dumps(ANSWER)

    async def chat_complete(self, messages, temperature=0.0):
        await asyncio.sleep(self.delay)
        return self.text, 0.0

    def get_model_name(self) -> str:
        return "sleep"


def process_cpu(pid: int) -> float:
    """CPU seconds a process has used (Linux /proc), to show what the stub itself costs."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


STUB_PID: list[int] = []


@contextmanager
def stub_server(kind: str, delay: float):
    if kind == "thread":
        with LLMStub(default=Reply.json(ANSWER, delay=delay)) as stub:
            yield stub.base_url
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.llm_stub", "--delay", str(delay), "--json", json.dumps(ANSWER)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    STUB_PID.append(proc.pid)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


class FullCollections:
    """Counts full (oldest-generation) garbage collections and their CPU time. litellm's import leaves
    ~400,000 objects that every full collection walks (~0.3 s CPU each), so one landing in a
    short run skews it."""

    def __init__(self) -> None:
        self.count, self.cpu, self._started = 0, 0.0, 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.process_time()
        else:
            self.count += 1
            self.cpu += time.process_time() - self._started


FULL_GC = FullCollections()


async def timed(coro) -> tuple[float, float, str]:
    wall, cpu, full = time.perf_counter(), time.process_time(), (FULL_GC.count, FULL_GC.cpu)
    await coro
    n, gc_cpu = FULL_GC.count - full[0], FULL_GC.cpu - full[1]
    note = f" (full GC x{n}: {gc_cpu:.2f}s)" if n else ""
    return time.perf_counter() - wall, time.process_time() - cpu, note


async def sequential(metric: ToolsErrorMetric, cases: list[EvalTestCase]) -> None:
    for c in cases:
        result = await metric.a_measure(c)
        assert result.status == "ok", result.error


async def concurrent(metric: ToolsErrorMetric, cases: list[EvalTestCase]) -> None:
    results = await asyncio.gather(*(metric.a_measure(c) for c in cases))
    failed = [r.error for r in results if r.status != "ok"]
    assert not failed, failed[:3]


async def compare(label: str, make, args: argparse.Namespace) -> None:
    cases = [case(i) for i in range(args.n)]
    seq_metric, conc_metric = make(1), make(args.concurrency)
    await seq_metric.a_measure(cases[0])
    await conc_metric.a_measure(cases[0])
    ideal = args.n / math.ceil(args.n / args.concurrency)
    speedups = []
    for r in range(args.repeat):
        t_seq, cpu_seq, gc_seq = await timed(sequential(seq_metric, cases))
        stub_before = process_cpu(STUB_PID[-1]) if STUB_PID else float("nan")
        t_conc, cpu_conc, gc_conc = await timed(concurrent(conc_metric, cases))
        stub_cpu = (process_cpu(STUB_PID[-1]) - stub_before) if STUB_PID else float("nan")
        speedups.append(t_seq / t_conc)
        stub_note = f", stub process {stub_cpu / args.n * 1000:.1f} ms" if STUB_PID else ""
        print(
            f"  {label} run {r + 1}: sequential {t_seq:6.2f}s{gc_seq} | concurrent({args.concurrency}) "
            f"{t_conc:5.2f}s{gc_conc} | speed-up {t_seq / t_conc:5.1f}x (ideal {ideal:.1f}x) | CPU per "
            f"evaluation: sequential {cpu_seq / args.n * 1000:.1f} ms, concurrent "
            f"{cpu_conc / args.n * 1000:.1f} ms{stub_note}"
        )
    print(
        f"  {label}: median speed-up {statistics.median(speedups):.1f}x, best {max(speedups):.1f}x "
        f"over {args.repeat} run(s)"
    )
    for metric in (seq_metric, conc_metric):
        close = getattr(metric.runner.client, "close", None)
        if close is not None:
            await close()


async def run(args: argparse.Namespace) -> None:
    with stub_server(args.stub, args.delay) as base_url:
        print(
            f"{args.n} evaluations, stub answering after {args.delay * 1000:.0f} ms ({args.stub}), "
            f"cache off, {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f}"
        )
        started = time.perf_counter()
        if not args.skip_litellm:
            await compare(
                "litellm",
                lambda c: ToolsErrorMetric(
                    "openai/gpt-4o-mini",
                    api_base=base_url,
                    api_key="sk-bench",
                    cache=False,
                    max_concurrency=c,
                ),
                args,
            )
            print(f"  (litellm warm-up and runs took {time.perf_counter() - started:.1f}s)")
        if not args.skip_direct:
            await compare(
                "direct ",
                lambda c: ToolsErrorMetric(DirectClient(base_url), cache=False, max_concurrency=c),
                args,
            )
    STUB_PID.clear()
    await compare(
        "no-http", lambda c: ToolsErrorMetric(SleepClient(args.delay), cache=False, max_concurrency=c), args
    )


def _ten_call_run() -> tuple[list[ToolCall], str]:
    """A 10-call run with recorded results and a final answer, so every rule runs
    (provenance, answers, claims)."""
    calls = [
        ToolCall(
            "search_flights",
            {"from": "PAR", "to": "NYC"},
            status="ok",
            output={"flights": [{"flight_id": "AF9", "price": 420.5}, {"flight_id": "AF7", "price": 388}]},
        ),
        ToolCall("book_flight", {"flight_id": "AF9"}, status="error", error="sold out"),
        ToolCall(
            "book_flight", {"flight_id": "AF7"}, status="ok", output={"booking": "BK-20931", "total": 388}
        ),
    ]
    calls = calls * 3 + [
        ToolCall("search_flights", {"from": "NYC", "to": "PAR"}, status="ok", output={"flights": []})
    ]
    return calls, "Booked AF7 (booking BK-20931) for $388 after AF9 sold out."


def bench_detectors(runs: int = 5_000) -> None:
    calls, answer = _ten_call_run()
    bad = [*calls[:-1], ToolCall("book_flite", {"flight_id": 9}, status="ok")]
    metric = ToolsErrorMetric(judge=False)
    for label, sample in (("clean", calls), ("with findings", bad)):
        started, cpu = time.perf_counter(), time.process_time()
        for _ in range(runs):
            detect_and_observe(sample, TOOLS, answer=answer, user_input="Fly me from Paris to New York")
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        case = EvalTestCase(
            input="Fly me from Paris to New York",
            actual_output=answer,
            tools_called=sample,
            available_tools=TOOLS,
        )
        whole = time.perf_counter()
        for _ in range(runs // 5):
            metric.measure(case)
        per_case = (time.perf_counter() - whole) / (runs // 5)
        print(
            f"detectors ({label}): {runs} runs of {len(sample)} calls: {elapsed / runs * 1e6:.0f} us per "
            f"run, {cpu / runs * 1e6:.0f} us process CPU (rules and observations); the whole deterministic "
            f"metric {per_case * 1e6:.0f} us per run (bench_detectors.py: CPU with fresh values, and against "
            f"another checkout)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stub", choices=("process", "thread"), default="process")
    parser.add_argument("--skip-litellm", action="store_true")
    parser.add_argument("--skip-direct", action="store_true")
    parser.add_argument(
        "--detectors-only", action="store_true", help="only the deterministic detectors' cost"
    )
    args = parser.parse_args()
    if not args.detectors_only:
        asyncio.run(run(args))
    bench_detectors()


if __name__ == "__main__":
    main()
