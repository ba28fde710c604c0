"""Shared test set-up. litellm must never fetch its model-cost map over the network (there is none)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# the collectors the tests start list themselves here, not among the user's own
os.environ.setdefault("AGENTOTEL_RUNTIME_DIR", tempfile.mkdtemp(prefix="agentotel-tests-"))


import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's clocks (an example's deadline, how fast inputs are drawn) measure the machine's other jobs as
# much as the code when the suite runs on several workers: the examples and their checks stay,
# the timing checks go
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


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


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """The module- and session-scoped fixtures of this suite an item uses, one name per built instance."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    params = getattr(getattr(item, "callspec", None), "params", {})
    shared = []
    for name in item.fixturenames:
        definitions = info.name2fixturedefs.get(name)
        if not definitions:
            continue
        definition = definitions[-1]
        if definition.scope in ("module", "package", "session") and definition.baseid.startswith("tests"):
            # no "]" at the end: xdist reads a group only when its "@" comes after the id's last "]"
            param = str(params.get(name, "")).replace("[", "(").replace("]", ")")
            shared.append(f"{definition.baseid}::{name}({param})")
    return shared


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` the tests that share a module or session fixture run on one worker, so a
    collector replaying every fixture trace or a browser is built once, not once per worker. The groups are
    the connected parts of tests linked through the instances they share."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    linked = [(item, _shared_fixtures(item)) for item in items]
    for _, shared in linked:
        for other in shared[1:]:
            parent[root(other)] = root(shared[0])
    for item, shared in linked:
        if shared:
            item.add_marker(pytest.mark.xdist_group(root(shared[0])))
