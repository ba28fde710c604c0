"""Shared test set-up. litellm must never fetch its model-cost map over the network (there is none)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# the collectors the tests start list themselves here, not among the user's own
os.environ.setdefault("AGENTOTEL_RUNTIME_DIR", tempfile.mkdtemp(prefix="agentotel-tests-"))


import pytest


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory):
    """The demo's database, closed: a file to read without a collector."""
    from tests.support.ui_data import demo_database

    return demo_database(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="session")
def ui_collector(demo_db, tmp_path_factory: pytest.TempPathFactory):
    """A collector serving a copy of the demo's database plus every fixture trace."""
    from tests.support.ui_data import copy_database, populated_collector

    with populated_collector(copy_database(demo_db, tmp_path_factory.mktemp("ui"))) as collector:
        yield collector
