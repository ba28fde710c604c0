"""The package's public names, and that importing it stays cheap (no SDK, no litellm, no jsonschema)."""

import subprocess
import sys

import pytest

import agentotel_eval


def test_every_public_name_is_the_object_its_home_module_defines():
    """Each name in ``__all__`` (lazy or not) resolves to the very object of the module that owns it, and a
    name that is not public is an AttributeError, not a silent None."""
    import importlib

    homes = {name: module for name, module in agentotel_eval._LAZY.items()}
    for name in agentotel_eval.__all__:
        value = getattr(agentotel_eval, name)
        if name == "__version__":
            assert value == importlib.metadata.version("agentotel-eval")
            continue
        home = homes.get(name) or value.__module__
        assert getattr(importlib.import_module(home), name) is value, name
    assert set(agentotel_eval._LAZY) <= set(agentotel_eval.__all__)
    with pytest.raises(AttributeError, match="no attribute 'not_public'"):
        agentotel_eval.not_public  # noqa: B018


def test_import_loads_no_heavy_dependency():
    code = (
        "import sys, agentotel_eval;"
        "heavy = [m for m in ('litellm', 'opentelemetry.sdk', 'jsonschema', 'duckdb', 'grpc') if m in "
        "sys.modules];print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
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
