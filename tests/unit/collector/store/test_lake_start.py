"""A node configured for a lake it cannot use writes nothing: not its DuckDB file, which the default install
would write in a format the lake extra's DuckDB 1.5.5 cannot open. Runs in both environments: without the
``[lake]`` extra the extension packages are missing; with it, the catalog's server does not answer."""

from __future__ import annotations

import dataclasses

import pytest

from agentotel_eval.collector.config import LakeConfig
from agentotel_eval.collector.service import Collector
from agentotel_eval.store import lake
from tests.support.collector_harness import fast_config


def test_a_node_that_cannot_use_its_lake_starts_nothing_and_writes_no_file(tmp_path):
    closed = LakeConfig(
        catalog="postgres://agentotel:s3cret-pw@127.0.0.1:1/lake", data=str(tmp_path / "data"), timeout=2.0
    )
    config = dataclasses.replace(fast_config(tmp_path / "node.duckdb"), lake=closed)
    with pytest.raises(lake.LakeError) as failed:
        Collector(config, summary_interval=3600).start()
    assert "s3cret-pw" not in str(failed.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no database, no sidecar, no data directory
