"""``agentotel-eval demo``: example agents against a collector on free ports, their scores, and the UI."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.collector_harness import http_request
from tests.support.ui_data import ROOT, cli


def test_demo_exit_prints_the_scored_runs_and_their_sql(tmp_path: Path) -> None:
    done = cli("demo", "--exit", "--db", str(tmp_path / "demo.duckdb"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(8 rows)" in out
    rows = [
        re.split(r"\s{2,}", line.strip())
        for line in out.splitlines()
        if line.startswith(("trip_planner", "weather_assistant", "currency_assistant"))
    ]
    by_input = {cells[1]: cells for cells in rows}
    assert len(by_input) == 8
    # agent, input, expected, called, correctness, exact, ordering, tool errors
    assert by_input["Is it sunny in Madrid today?"][4:7] == ["0.00 FAIL"] * 3  # a wrong tool
    assert by_input["Find me a flight and a hotel in Oslo, and book it."][4:7] == [
        "0.67 pass",
        "0.00 FAIL",
        "0.67 pass",
    ]  # missing
    assert by_input["Plan a trip to Rome and book a hotel there."][4:7] == [
        "1.00 pass",
        "1.00 pass",
        "0.67 pass",
    ]  # out of order
    assert by_input["Convert 50 GBP to JPY for my Tokyo trip."][4:7] == [
        "1.00 pass",
        "0.00 FAIL",
        "1.00 pass",
    ]  # an extra call
    assert by_input["What's the weather in Atlantis?"][7] == "repeated_failure, FAIL"  # a tool error, retried
    assert by_input["What's the weather in Paris?"][4:] == ["1.00 pass"] * 3 + ["none, pass"]
    header = next(line for line in out.splitlines() if line.startswith("agent "))
    assert all(
        f"{name} {arrow}" in header
        for name, arrow in (("correctness", "↑"), ("exact", "↑"), ("ordering", "↑"), ("tool errors", "↓"))
    )
    assert "↑ higher is better, ↓ lower is better; pass/FAIL against the threshold" in out
    assert "FROM agent_runs r" in out and "LEFT JOIN latest_evaluations" in out
    # only what outlives the command is printed: the database kept with --db, never the UI it no longer serves
    assert "web UI" not in out and f"--db {tmp_path / 'demo.duckdb'}" in out


def test_demo_exit_with_a_temporary_database_names_no_file_that_is_gone() -> None:
    done = cli("demo", "--exit")
    assert done.returncode == 0, done.stderr
    assert "web UI" not in done.stdout and "agentotel-demo-" not in done.stdout
    assert "keep the database with --db FILE" in done.stdout
    assert "deleting its temporary database" in done.stderr


@pytest.mark.parametrize(
    ("stop", "ignored_at_start"),
    [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)],
    ids=["ctrl-c", "sigterm", "ctrl-c-started-in-the-background"],
)
def test_demo_serves_the_ui_until_stopped_and_removes_its_directory(
    stop: int, ignored_at_start: bool, tmp_path: Path
) -> None:
    """Ctrl+C or SIGTERM stop it and remove its temporary directory (database, WAL and lock), also when a
    shell started it in the background, where SIGINT starts out ignored."""
    # a temporary directory of its own: demos that other test workers run make theirs beside it
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path)}
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignored_at_start else None
    before = set(_demo_dirs(tmp_path))
    process = subprocess.Popen(
        [sys.executable, "-m", "agentotel_eval.cli", "demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=ROOT,
        preexec_fn=ignore,
    )
    assert process.stdout is not None
    try:
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
        seen: list[str] = []
        url = None
        deadline = time.monotonic() + 90
        while url is None and time.monotonic() < deadline:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
            found = re.search(r"web UI: (http://[\d.:]+)/", seen[-1])
            url = found.group(1) if found else None
        assert url, "".join(seen)
        answer = http_request(url, "GET", "/runs")
        assert answer.status == 200 and b"trip_planner" in answer.body
        workdirs = [d for d in _demo_dirs(tmp_path) if d not in before]
        assert len(workdirs) == 1, "the demo's temporary directory"
        process.send_signal(stop)
        assert process.wait(30) == 0
        while True:
            try:
                seen.append(lines.get(timeout=2))
            except queue.Empty:
                break
        assert any(line.startswith("stopping:") for line in seen), "".join(seen)
        assert not any(d.exists() for d in workdirs)  # database, WAL, lock: the directory goes with it
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _demo_dirs(tmp: Path) -> list[Path]:
    return list(tmp.glob("agentotel-demo-*"))
