"""The ``agentotel-eval`` command: every subcommand's help, ``--version``, and a start that loads nothing heavy."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

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


@pytest.mark.parametrize(("command", "since"), [("report", "1.5h"), ("report", "all"), ("rescore", "1.5h"),
                                                ("rescore", " 90m ")])
def test_since_reads_the_one_duration_grammar(command: str, since: str) -> None:
    args = build_parser().parse_args([command, "--since", since, *(["--out", "x.html"] if command == "report" else [])])
    assert args.since == since.strip()


@pytest.mark.parametrize(("command", "since", "says"), [
    ("report", "last week", "unknown time range 'last week': expected all or a duration"),
    ("rescore", "all", "unknown time range 'all': expected a duration"),
    ("rescore", "1h30m", "unknown time range '1h30m': expected a duration"),
])
def test_a_bad_since_is_a_usage_error(command: str, since: str, says: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, "--since", since, *(["--out", "x.html"] if command == "report" else [])])
    assert exited.value.code == 2
    assert f"argument --since: {says}" in capsys.readouterr().err


def test_version_names_the_distribution_and_its_version() -> None:
    done = subprocess.run([sys.executable, "-m", "agentotel_eval.cli", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"agentotel-eval {importlib.metadata.version('agentotel-eval')}\n"


def test_building_the_command_line_loads_no_heavy_dependency() -> None:
    """The commands import duckdb, pyarrow, the collector, litellm and the SDK inside ``run``: ``--help`` stays
    fast."""
    code = (
        "import sys; from agentotel_eval.cli import build_parser; build_parser();"
        "heavy = ('duckdb', 'pyarrow', 'grpc', 'litellm', 'opentelemetry.sdk', 'agentotel_eval.collector');"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == ""


@pytest.mark.parametrize(("argv", "usage", "hint"), [
    (["serve", "--port", "9999"], "usage: agentotel-eval serve",
     "unrecognized arguments: --port 9999 (did you mean --grpc HOST:PORT or --http HOST:PORT?)"),
    (["query", "--dbb", "x", "select 1"], "usage: agentotel-eval query",
     "unrecognized arguments: --dbb select 1 (did you mean --db?)"),
    (["report", "--out", "r.html", "--sinse", "7d"], "usage: agentotel-eval report", "(did you mean --since?)"),
])
def test_an_unknown_flag_shows_the_subcommands_usage_and_the_closest_flag(
        argv: list[str], usage: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and hint in err


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path) -> None:
    """``agentotel-eval explain --file X | head``: no BrokenPipeError traceback."""
    from tests.fixture_traces import TRACES_DIR

    biggest = max(TRACES_DIR.glob("*.pb"), key=lambda p: p.stat().st_size)
    process = subprocess.Popen([sys.executable, "-m", "agentotel_eval.cli", "explain", "--file", str(biggest)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the first line
    err = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    assert "Traceback" not in err and "BrokenPipeError" not in err
