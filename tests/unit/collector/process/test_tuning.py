"""Process tuning: each collector process tunes itself at start (the serve command its own, every helper its
own), and a collector embedded in another program leaves that program's process as it was."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from agentotel_eval.collector.process.tuning import _ARROW_POOL_VARIABLE as ARROW_POOL_VARIABLE
from agentotel_eval.collector.process.tuning import _libc
from tests.support.collector_harness import running_collector

glibc = pytest.mark.skipif(_libc() is None, reason="the allocator settings apply to glibc only")


def _in_fresh_process(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != ARROW_POOL_VARIABLE} | env
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


@glibc
def test_a_tuned_process_collects_less_often_and_allocates_arrow_buffers_through_malloc() -> None:
    out = _in_fresh_process("""
        import gc, pyarrow as pa
        before = pa.default_memory_pool().backend_name
        from agentotel_eval.collector.process.tuning import TUNED, tune_process
        tune_process(TUNED)
        kept = pa.array(["x" * 100] * 1000)  # allocated from the new pool
        print(before, pa.default_memory_pool().backend_name, pa.system_memory_pool().bytes_allocated() > 0,
              gc.get_threshold()[0])
    """)
    before, after, used, threshold = out.split()
    assert threshold == "50000"
    if before == "system":
        pytest.skip("this pyarrow's default pool is already the system allocator")
    assert (after, used) == ("system", "True")


@glibc
def test_a_pool_the_user_chose_is_kept() -> None:
    out = _in_fresh_process(
        """
        import pyarrow as pa
        from agentotel_eval.collector.process.tuning import TUNED, tune_process
        tune_process(TUNED)
        print(pa.default_memory_pool().backend_name)
    """,
        **{ARROW_POOL_VARIABLE: "mimalloc"},
    )
    assert out == "mimalloc"


def test_untuned_leaves_the_process_as_it_was() -> None:
    out = _in_fresh_process("""
        import gc, sys, pyarrow as pa
        before = (pa.default_memory_pool().backend_name, gc.get_threshold(), sys.getswitchinterval())
        from agentotel_eval.collector.process.tuning import UNTUNED, tune_process
        tune_process(UNTUNED)
        print(before == (pa.default_memory_pool().backend_name, gc.get_threshold(), sys.getswitchinterval()))
    """)
    assert out == "True"


def test_an_embedded_collector_leaves_its_process_alone(tmp_path) -> None:
    before = (
        pa.default_memory_pool().backend_name,
        gc.get_threshold(),
        sys.getswitchinterval(),
        gc.get_freeze_count(),
    )
    with running_collector(tmp_path / "m.duckdb"):
        during = (
            pa.default_memory_pool().backend_name,
            gc.get_threshold(),
            sys.getswitchinterval(),
            gc.get_freeze_count(),
        )
    assert during == before
    assert (
        pa.default_memory_pool().backend_name,
        gc.get_threshold(),
        sys.getswitchinterval(),
        gc.get_freeze_count(),
    ) == before


def test_a_decode_worker_loads_neither_duckdb_nor_arrow_compute() -> None:
    """Each module a helper loads stays resident in it: the decode workers decode and convert a request with
    pyarrow's core only (compute costs ~8 MB a process, DuckDB far more)."""
    out = _in_fresh_process("""
        import sys
        import agentotel_eval.collector.decode.worker
        from agentotel_eval.otlp.encode import encode_traces
        from agentotel_eval.otlp.records import SpanRecord
        from agentotel_eval.collector.decode.batch import decode_request, to_message
        span = SpanRecord(trace_id="ab" * 16, span_id="cd" * 8, parent_span_id=None,
                          name="execute_tool get_weather",
                          start_ns=1_700_000_000_000_000_000, end_ns=1_700_000_001_000_000_000,
                          attributes={"gen_ai.operation.name": "execute_tool",
                                      "gen_ai.tool.name": "get_weather"})
        batch = decode_request("traces", "protobuf", encode_traces([span]).SerializeToString())
        assert batch.rows.num_rows == 1, batch
        to_message(1, batch)
        print(",".join(m for m in ("duckdb", "pyarrow.compute") if m in sys.modules) or "-")
    """)
    assert out == "-"
