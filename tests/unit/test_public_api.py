"""The package's public names, and that importing it stays cheap (no SDK, no litellm, no jsonschema)."""

import subprocess
import sys

import agentotel_eval


def test_every_public_name_resolves():
    for name in agentotel_eval.__all__:
        assert getattr(agentotel_eval, name) is not None, name


def test_import_loads_no_heavy_dependency():
    code = (
        "import sys, agentotel_eval;"
        "heavy = [m for m in ('litellm', 'opentelemetry.sdk', 'jsonschema', 'duckdb', 'grpc') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_run_sync_keeps_context_variables_inside_a_running_loop():
    import asyncio

    from agentotel_eval.metrics.base import run_sync
    from agentotel_eval.runtime import judge_cache_dir

    async def read() -> object:
        return judge_cache_dir.get()

    async def main() -> object:
        token = judge_cache_dir.set("/tmp/cache-here")
        try:
            return run_sync(read())  # called from inside a running loop: runs in a helper thread
        finally:
            judge_cache_dir.reset(token)

    assert asyncio.run(main()) == "/tmp/cache-here"
