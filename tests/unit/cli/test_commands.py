"""The ``agentotel-eval`` command: every subcommand's help, ``--version``, and a start that
loads nothing heavy."""

from __future__ import annotations

import argparse
import importlib.metadata
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from agentotel_eval.cli import COMMANDS, build_parser, main


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_has_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: agentotel-eval {name}")


def test_the_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for name, (_, help_text) in COMMANDS.items():
        assert f"{name} {help_text}" in out


@pytest.mark.parametrize(
    ("command", "since"), [("report", "1.5h"), ("report", "all"), ("rescore", "1.5h"), ("rescore", " 90m ")]
)
def test_since_reads_the_one_duration_grammar(command: str, since: str) -> None:
    args = build_parser().parse_args(
        [command, "--since", since, *(["--out", "x.html"] if command == "report" else [])]
    )
    assert args.since == since.strip()


@pytest.mark.parametrize(
    ("command", "since", "says"),
    [
        ("report", "last week", "unknown time range 'last week': expected all or a duration"),
        ("rescore", "all", "unknown time range 'all': expected a duration"),
        ("rescore", "1h30m", "unknown time range '1h30m': expected a duration"),
    ],
)
def test_a_bad_since_is_a_usage_error(
    command: str, since: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(
            [command, "--since", since, *(["--out", "x.html"] if command == "report" else [])]
        )
    assert exited.value.code == 2
    assert f"argument --since: {says}" in capsys.readouterr().err


def test_version_names_the_distribution_and_its_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentotel_eval.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"agentotel-eval {importlib.metadata.version('agentotel-eval')}\n"


def test_building_the_command_line_loads_no_heavy_dependency() -> None:
    """The commands import duckdb, pyarrow, the collector, litellm and the SDK inside ``run``: ``--help``
    stays fast."""
    code = (
        "import sys; from agentotel_eval.cli import build_parser; build_parser();"
        "heavy = ('duckdb', 'pyarrow', 'grpc', 'litellm', 'opentelemetry.sdk', 'agentotel_eval.collector');"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == ""


@pytest.mark.parametrize(
    ("argv", "usage", "hint"),
    [
        (
            ["serve", "--port", "9999"],
            "usage: agentotel-eval serve",
            "unrecognized arguments: --port 9999 (did you mean --grpc HOST:PORT or --http HOST:PORT?)",
        ),
        (
            ["query", "--dbb", "x", "select 1"],
            "usage: agentotel-eval query",
            "unrecognized arguments: --dbb select 1 (did you mean --db?)",
        ),
        (
            ["report", "--out", "r.html", "--sinse", "7d"],
            "usage: agentotel-eval report",
            "(did you mean --since?)",
        ),
    ],
)
def test_an_unknown_flag_shows_the_subcommands_usage_and_the_closest_flag(
    argv: list[str], usage: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and hint in err


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path) -> None:
    """``agentotel-eval explain --file X | head``: no BrokenPipeError traceback."""
    from tests.support.fixture_traces import TRACES_DIR

    biggest = max(TRACES_DIR.glob("*.pb"), key=lambda p: p.stat().st_size)
    process = subprocess.Popen(
        [sys.executable, "-m", "agentotel_eval.cli", "explain", "--file", str(biggest)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the first line
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0  # the reader has what it wanted: not a failure
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_query_into_head_succeeds_every_time(tmp_path) -> None:
    """``agentotel-eval query ... | head -3`` under ``set -o pipefail``: 0 every time, however far the query
    got before head left."""
    from agentotel_eval.store.opening import open_store

    db = tmp_path / "spans.duckdb"
    con = open_store(db)
    con.execute(
        "INSERT INTO spans (trace_id, span_id, name) SELECT printf('%032x', i), printf('%016x', i), "
        "'span ' || i FROM range(20000) t(i)"
    )
    con.close()
    command = (
        f"set -o pipefail; {sys.executable} -m agentotel_eval.cli query "
        f"'SELECT trace_id, span_id, name FROM spans' --db {db} --format csv | head -3"
    )
    for _ in range(6):
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.splitlines()) == 3 and "Traceback" not in done.stderr


def test_a_bare_command_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    out = capsys.readouterr().out
    assert all(name in out for name in COMMANDS) and "COMMAND --help" in out


@pytest.mark.parametrize(
    ("word", "hint"),
    [
        ("serv", "did you mean serve?"),
        ("rescor", "did you mean rescore?"),
        ("exlpain", "did you mean explain?"),
        ("frobnicate", ""),
    ],
)
def test_a_misspelt_command_gets_the_closest_one(
    word: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([word, "--db", "x.duckdb"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"unknown command {word!r}" in err and hint in err and "the commands: serve, query" in err


def _parsers(parser: Any) -> Iterator[Any]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _parsers(child)


def test_no_help_shows_restructuredtext_literals() -> None:
    helps = [p.format_help() for p in _parsers(build_parser())]
    assert len(helps) > len(COMMANDS)  # the subcommands' own subcommands too (lake maintain, lake ui)
    assert not [h.splitlines()[0] for h in helps if "``" in h]


def test_the_top_level_help_describes_lake_ui() -> None:
    lake_line = build_parser().format_help().split("    lake", 1)[1]
    assert "lake ui" in " ".join(lake_line.split()) and "lake maintain" in " ".join(lake_line.split())
