"""process.tune_malloc: Arrow's buffers go through the tuned glibc allocator in every collector process, unless the
user chose a pool; the collector's own process gets its previous pool back at shutdown."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from collector.process.tuning import ARROW_POOL_VARIABLE, tune_malloc
from tests.collector_harness import running_collector

glibc = pytest.mark.skipif(not tune_malloc(), reason="the allocator settings apply to glibc only")


def _in_fresh_process(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != ARROW_POOL_VARIABLE} | env
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=environ, capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout.strip()


@glibc
def test_a_helper_process_allocates_arrow_buffers_through_malloc() -> None:
    out = _in_fresh_process("""
        import logging, pyarrow as pa
        before = pa.default_memory_pool().backend_name
        from collector.process.child import apply_helper_settings
        apply_helper_settings("test", logging.WARNING, 0, False, True)
        kept = pa.array(["x" * 100] * 1000)  # allocated from the new pool
        print(before, pa.default_memory_pool().backend_name, pa.system_memory_pool().bytes_allocated() > 0)
    """)
    before, after, used = out.split()
    if before == "system":
        pytest.skip("this pyarrow's default pool is already the system allocator")
    assert (after, used) == ("system", "True")


@glibc
def test_a_pool_the_user_chose_is_kept() -> None:
    out = _in_fresh_process("""
        import pyarrow as pa
        from collector.process.tuning import arrow_through_malloc, tune_malloc
        assert tune_malloc()
        print(arrow_through_malloc(), pa.default_memory_pool().backend_name)
    """, **{ARROW_POOL_VARIABLE: "mimalloc"})
    assert out == "None mimalloc"


@glibc
def test_helpers_keep_the_default_pool_without_tune_malloc() -> None:
    out = _in_fresh_process("""
        import logging, pyarrow as pa
        before = pa.default_memory_pool().backend_name
        from collector.process.child import apply_helper_settings
        apply_helper_settings("test", logging.WARNING, 0, False, False)
        print(before == pa.default_memory_pool().backend_name)
    """)
    assert out == "True"


@glibc
@pytest.mark.skipif(bool(os.environ.get(ARROW_POOL_VARIABLE)), reason="the user chose a pool for this run")
def test_the_collector_switches_its_own_process_and_restores_at_shutdown(tmp_path) -> None:
    before = pa.default_memory_pool()
    if before.backend_name == "system":  # another collector in this process left it so
        pa.set_memory_pool(pa.mimalloc_memory_pool())
    try:
        expected = pa.default_memory_pool().backend_name
        with running_collector(tmp_path / "m.duckdb", receiver={"decode_workers": 0}):
            assert pa.default_memory_pool().backend_name == "system"
        assert pa.default_memory_pool().backend_name == expected
        with running_collector(tmp_path / "n.duckdb", receiver={"decode_workers": 0},
                               process={"tune_malloc": False}):
            assert pa.default_memory_pool().backend_name == expected
    finally:
        pa.set_memory_pool(before)


def test_a_decode_worker_loads_neither_duckdb_nor_arrow_compute() -> None:
    """Each module a helper loads stays resident in it: the decode workers decode and convert a request with
    pyarrow's core only (compute costs ~8 MB a process, DuckDB far more)."""
    out = _in_fresh_process("""
        import sys
        import collector.decode.worker
        from agentotel_eval.otlp.encode import encode_traces
        from agentotel_eval.otlp.records import SpanRecord
        from collector.decode.batch import decode_request, to_frames
        span = SpanRecord(trace_id="ab" * 16, span_id="cd" * 8, parent_span_id=None, name="execute_tool get_weather",
                          start_ns=1_700_000_000_000_000_000, end_ns=1_700_000_001_000_000_000,
                          attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"})
        batch = decode_request("traces", "protobuf", encode_traces([span]).SerializeToString())
        assert batch.rows.num_rows == 1, batch
        to_frames(batch)
        print(",".join(m for m in ("duckdb", "pyarrow.compute") if m in sys.modules) or "-")
    """)
    assert out == "-"
