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

from tests.collector_harness import http_request
from tests.ui_data import ROOT, cli


def test_demo_exit_prints_the_scored_runs_and_their_sql(tmp_path: Path) -> None:
    done = cli("demo", "--exit", "--db", str(tmp_path / "demo.duckdb"))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "(8 rows)" in out
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()
            if line.startswith(("trip_planner", "weather_assistant", "currency_assistant"))]
    by_input = {cells[1]: cells for cells in rows}
    assert len(by_input) == 8
    # agent, input, expected, called, correctness, exact, ordering, tool errors
    assert by_input["Is it sunny in Madrid today?"][4:7] == ["0.0", "0.0", "0.0"]  # a wrong tool
    assert by_input["Find me a flight and a hotel in Oslo, and book it."][4:7] == ["0.67", "0.0", "0.67"]  # missing
    assert by_input["Plan a trip to Rome and book a hotel there."][4:7] == ["1.0", "1.0", "0.67"]  # out of order
    assert by_input["Convert 50 GBP to JPY for my Tokyo trip."][4:7] == ["1.0", "0.0", "1.0"]  # an extra call
    assert by_input["What's the weather in Atlantis?"][7] == "repeated_failure"  # a tool error, retried as it was
    assert by_input["What's the weather in Paris?"][4:] == ["1.0", "1.0", "1.0", "none"]
    assert "FROM agent_runs r" in out and "LEFT JOIN latest_evaluations" in out
    assert re.search(r"web UI: http://127\.0\.0\.1:\d+/", out)


def test_demo_serves_the_ui_until_interrupted() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "agentotel_eval.cli", "demo"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT)
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
        database = re.search(r"database (\S+)", "".join(seen))
        assert database
        answer = http_request(url, "GET", "/runs")
        assert answer.status == 200 and b"trip_planner" in answer.body
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
        assert not Path(database.group(1)).exists()  # the temporary database goes with it
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
