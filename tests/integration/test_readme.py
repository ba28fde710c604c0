"""README's commands as a new user runs them: every file they name exists, and the first query shows the
expected tools a run was scored against even when they came from a config rule (``agent_runs.expected_tools``
holds only those a span carried)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from agentotel_eval.cli.demo import _export_to
from agentotel_eval.collector.config_scoring import parse_expectations
from agentotel_eval.tracing import traced
from tests.support.collector_harness import running_collector, wait_until

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
OUTPUTS = ("-o", "--out", "--junit")
_FILE = re.compile(r"^[\w./-]+\.(toml|json|jsonl|pb|py|yaml|yml)$")


def _commands() -> list[list[str]]:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    text = "\n".join(blocks).replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in text.splitlines() if line.strip()]


def test_every_file_the_commands_name_exists() -> None:
    named = []
    for words in _commands():
        for before, word in zip(["", *words], words, strict=False):
            if before in OUTPUTS or word.startswith((".venv/", "http")) or not _FILE.match(word):
                continue
            named.append(word)
    assert "examples/agentotel.toml" in named
    assert [w for w in named if not (ROOT / w).exists()] == []


@traced(kind="tool")
def get_weather(city: str) -> str:
    return "sunny"


@traced(kind="agent", name="weather-bot")
def weather_bot(question: str) -> str:  # no expected tools on its span: a config rule gives them
    return get_weather("Paris")


def test_the_first_query_shows_the_expectation_a_rule_gave(tmp_path) -> None:
    (sql,) = [
        w[w.index("query") + 1] for w in _commands() if "query" in w and "run_evaluations" in " ".join(w)
    ]
    rule = parse_expectations(
        [{"name": "weather", "agent": "weather-bot", "expected_tools": ["get_weather"]}]
    )
    with running_collector(tmp_path / "readme.duckdb", expectations=rule) as collector:
        provider = _export_to(collector)
        weather_bot("What's the weather in Paris?")
        provider.force_flush()
        wait_until(lambda: collector.query(sql)["rows"], timeout=30, what="the scored run")
        result = collector.query(sql)
        row = dict(zip(result["columns"], result["rows"][0], strict=True))
        assert row["expected"] == ["get_weather"] and row["expected_from"] == "rule:weather"
        assert (row["score"], row["success"]) == (1.0, True)
        stored = collector.query("SELECT expected_tools FROM agent_runs")["rows"]
        assert stored == [[None]]  # what the old first query showed
