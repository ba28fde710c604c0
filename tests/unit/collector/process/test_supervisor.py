"""The supervisor's restart policy, and what a helper that cannot start costs its caller."""

from __future__ import annotations

import pytest

from agentotel_eval.collector.process.messages import Setup
from agentotel_eval.collector.process.supervisor import HelperUnavailable, RestartPolicy, Supervisor


def test_the_restart_delay_doubles_from_the_first_up_to_the_bound():
    policy = RestartPolicy(first_delay=0.2, max_delay=5.0)
    assert [policy.delay(n) for n in range(1, 8)] == [0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0]


def test_a_helper_that_exits_before_it_is_ready_fails_its_start(tmp_path):
    """A helper that exits at once: the start fails (it is not restarted), and sending to it is refused."""
    supervisor = Supervisor(
        "not-a-helper",
        "tests.support.helper_exits",
        Setup(20, (0, False)),
        lambda *_: None,
        start_timeout=1.0,
    )
    with pytest.raises(HelperUnavailable, match="exited while starting"):
        supervisor.start()
    assert not supervisor.alive
    with pytest.raises(HelperUnavailable, match="no not-a-helper process is running"):
        supervisor.send(Setup(20, (0, False)))


def test_a_helper_that_never_says_ready_is_stopped_at_the_start_timeout():
    """A helper that runs but never answers: the start gives up at its timeout and stops it."""
    supervisor = Supervisor(
        "silent", "tests.support.helper_silent", Setup(20, (0, False)), lambda *_: None, start_timeout=1.0
    )
    with pytest.raises(HelperUnavailable, match="did not start within 1s"):
        supervisor.start()
    assert supervisor.pid is not None and supervisor._proc is not None and supervisor._proc.poll() is not None
    assert supervisor.restarts == 0 and not supervisor.alive


def test_stopping_a_supervisor_whose_start_failed_returns_at_once():
    import time

    supervisor = Supervisor(
        "not-a-helper",
        "tests.support.helper_exits",
        Setup(20, (0, False)),
        lambda *_: None,
        start_timeout=1.0,
    )
    with pytest.raises(HelperUnavailable):
        supervisor.start()
    started = time.monotonic()
    supervisor.stop(timeout=5.0)
    assert time.monotonic() - started < 1.0 and supervisor.finished.is_set()
