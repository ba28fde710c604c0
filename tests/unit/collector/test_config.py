"""Collector configuration: defaults, TOML, flags over the file, and errors that name the bad key."""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys

import pytest

from agentotel_eval.cli import serve as serve_cmd
from agentotel_eval.collector.config import (
    CollectorConfig,
    ConfigError,
    MiB,
    default_config,
    load_config,
    parse_address,
    parse_duration,
    parse_size,
)


def _args(**kw) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    serve_cmd.add_arguments(parser)
    argv = []
    for key, value in kw.items():
        argv += [f"--{key.replace('_', '-')}", str(value)]
    return parser.parse_args(argv)


def test_defaults_are_the_contract_and_valid():
    config = default_config().validate()
    assert (config.db, config.grpc, config.http) == ("agentotel.duckdb", "127.0.0.1:4317", "127.0.0.1:4318")
    assert config.receiver.max_request_size == 20 * MiB
    assert config.assembler.grace_period == 2.0
    assert config.retention_seconds is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        (2, 2.0),
        (0.5, 0.5),
        ("500ms", 0.5),
        ("2s", 2.0),
        ("5m", 300.0),
        ("12h", 43200.0),
        ("30d", 2592000.0),
        ("1w", 604800.0),
        ("1.5h", 5400.0),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "size"), [(1024, 1024), ("20MiB", 20 * MiB), ("512KB", 512000), ("1 gib", 1 << 30)]
)
def test_sizes(text, size):
    assert parse_size(text) == size


def test_addresses():
    assert parse_address("127.0.0.1:4317") == ("127.0.0.1", 4317)
    assert parse_address("[::1]:0") == ("::1", 0)
    assert parse_address(":4318") == ("0.0.0.0", 4318)
    for bad in ("localhost", "127.0.0.1:99999", "http://127.0.0.1:4317", "host:port"):
        with pytest.raises(ConfigError):
            parse_address(bad, "grpc")


def test_a_toml_file_sets_every_section(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        """
        db = "traces.duckdb"
        http = "127.0.0.1:9318"
        retention = "30d"
        [receiver]
        max_request_size = "4MiB"
        [writer]
        flush_interval = "10ms"
        max_queue_records = 1000
        [assembler]
        grace_period = "500ms"
        max_open_traces = 50
        [query]
        row_limit = 5
        """
    )
    config = load_config(path).validate()
    assert (
        config.db == "traces.duckdb" and config.http == "127.0.0.1:9318" and config.grpc == "127.0.0.1:4317"
    )
    assert config.retention_seconds == 30 * 86400
    assert config.receiver.max_request_size == 4 * MiB
    assert config.writer.flush_interval == 0.01 and config.writer.max_queue_records == 1000
    assert config.assembler.grace_period == 0.5 and config.assembler.max_open_traces == 50
    assert config.assembler.max_wait == default_config().assembler.max_wait
    assert config.query.row_limit == 5


@pytest.mark.parametrize(
    ("toml", "key", "why"),
    [
        ('dbb = "x"', "dbb", "unknown setting"),
        ("[writer]\nflush_intervall = 1", "writer.flush_intervall", "unknown setting"),
        ("[nope]\na = 1", "nope", "unknown setting"),
        ('[writer]\nmax_queue_records = "lots"', "writer.max_queue_records", "expected an integer"),
        ('[receiver]\ngrpc_workers = "5"', "receiver.grpc_workers", "expected an integer, got '5'"),
        ("[writer]\nmax_queue_records = 1.0", "writer.max_queue_records", "expected an integer, got 1.0"),
        ("[assembler]\nprocess = 1", "assembler.process", "expected true or false, got 1"),
        ("[scoring]\nthreshold = true", "scoring.threshold", "expected a number, got True"),
        ("[scoring]\nmodes = 3", "scoring.modes", "modes must be a non-empty list"),
        ("db = 1979-05-27", "db", "TOML date"),
        ('[forward]\nurl = "http://x:4318"\nheaders = { a = 1 }', "forward.headers.a", "expected a string"),
        ("[assembler]\ngrace_period = true", "assembler.grace_period", "duration"),
        ('[receiver]\nmax_request_size = "huge"', "receiver.max_request_size", "size"),
        ("writer = 3", "writer", "table of settings"),
        ("grpc = 4317", "grpc", "expected a string"),
    ],
)
def test_bad_keys_and_values_are_named(tmp_path, toml, key, why):
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=why) as info:
        load_config(path)
    assert info.value.key == key
    assert str(info.value).startswith(f"{key}: in {path}")


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"grpc": "nowhere"}, "grpc"),
        ({"http": "127.0.0.1:70000"}, "http"),
        ({"dataset": "/no/such/dataset.jsonl"}, "dataset"),
        ({"retention": "soon"}, "retention"),
        ({"log_level": "loud"}, "log_level"),
        ({"grpc": "127.0.0.1:5000", "http": "127.0.0.1:5000"}, "http"),
    ],
)
def test_validate_names_the_bad_key(changes, key):
    with pytest.raises(ConfigError) as info:
        dataclasses.replace(CollectorConfig(), **changes).validate()
    assert info.value.key == key


def test_section_values_are_validated():
    config = default_config()
    bad = dataclasses.replace(config, assembler=dataclasses.replace(config.assembler, grace_period=0))
    with pytest.raises(ConfigError, match=r"assembler\.grace_period"):
        bad.validate()


def test_unreadable_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("db = ")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(broken)


def test_flags_win_over_the_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('db = "from-file.duckdb"\nhttp = "127.0.0.1:9999"\n[assembler]\ngrace_period = 7\n')
    config = serve_cmd.build_config(_args(config=path, db="from-flag.duckdb", grace_period="1s"))
    assert config.db == "from-flag.duckdb"
    assert config.http == "127.0.0.1:9999"
    assert config.assembler.grace_period == 1.0


def test_forward_flag_sets_the_url_and_keeps_the_file_s_headers(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[forward]\nurl = "http://from-file:4318"\nheaders = { authorization = "Bearer x" }\n')
    config = serve_cmd.build_config(_args(config=path, forward="grpc://127.0.0.1:14317"))
    assert config.forward.url == "grpc://127.0.0.1:14317"
    assert config.forward.headers == {"authorization": "Bearer x"}
    assert config.forward.resolved_protocol() == "grpc"
    with pytest.raises(ConfigError, match=r"forward\.url must be like"):
        serve_cmd.build_config(_args(forward="ftp://x"))


def test_scoring_sections_load_from_toml(tmp_path):
    dataset = tmp_path / "ds.jsonl"
    dataset.write_text('{"input": "hi", "expected_tools": ["greet"]}\n')
    path = tmp_path / "c.toml"
    path.write_text(
        f'dataset = "{dataset}"\nforward = "http://127.0.0.1:4318"\n'
        '[scoring]\nmodes = ["default", "exact"]\nthreshold = 0.8\n'
        '[judge]\nmodel = "openai/gpt-4o-mini"\nsample_rate = 0.5\nmax_cost_usd_per_day = 1.5\n'
        'api_base = "http://127.0.0.1:9/v1"\n'
        '[[expectations]]\nagent = "travel_*"\nexpected_tools = ["search", "book"]\n'
    )
    config = load_config(path)
    assert config.scoring.modes == ("default", "exact") and config.scoring.threshold == 0.8
    assert config.judge.model == "openai/gpt-4o-mini" and config.judge.max_cost_usd_per_day == 1.5
    assert config.judge.llm_kwargs == {"api_base": "http://127.0.0.1:9/v1"}
    assert config.expectations[0].expected_tools == ("search", "book")
    assert config.forward.resolved_protocol() == "http/protobuf"
    scoring = config.validate().scoring_config()
    assert scoring.dataset.lookup("hi").expected_tools == ("greet",)


@pytest.mark.parametrize(
    ("toml", "key", "why"),
    [
        (
            '[judge]\nmodel = "m"\nmodle = "x"\n',
            "judge.modle",
            r"unknown setting \(known here: api_base, api_key, ",
        ),
        ("[judge]\nsample_rate = 0.5\n", "judge", r"model is required"),
        ('[judge]\nmodel = " "\n', "judge.model", r"expected a litellm model name"),
        ('[judge]\nmodel = "m"\nmax_concurrency = 0\n', "judge.max_concurrency", r"must be >= 1, got 0"),
        ('[scoring]\nmodes = ["fuzzy"]\n', "scoring.modes", r"unknown mode\(s\) \['fuzzy'\]"),
        (
            '[scoring]\nmode = ["exact"]\n',
            "scoring.mode",
            r"unknown setting \(known here: detectors, disabled_rules, enabled, modes, ",
        ),
        (
            '[[expectations]]\nagent = "a"\n',
            "expectations[0]",
            r"expected_tools or a trajectory table is required",
        ),
        (
            '[[expectations]]\nagent = "a"\n[expectations.trajectory]\nsteps = [{ tool = "x", count = { '
            "min = 2, max = 1 } }]\n",
            "expectations[0].trajectory",
            r"steps\[0\]\.count: max \(1\) must be at least min \(2\)",
        ),
        (
            '[[expectations]]\nagent = "a"\n[expectations.trajectory]\nsteps = [{ tool = "x", args = { n = '
            '{ "$gtt" = 1 } } }]\n',
            "expectations[0].trajectory",
            r"steps\[0\]\.args\.n: unknown operator",
        ),
        ("forward = 3\n", "forward", r"must be a table or a URL"),
        ('[forward]\nprotocol = "grpc"\n', "forward", r"url is required"),
    ],
)
def test_invalid_scoring_sections_name_the_key(tmp_path, toml, key, why):
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=why) as info:
        load_config(path)
    assert info.value.key == key


def test_every_problem_is_counted_and_the_first_named(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('log_level = 3\n[writer]\nthreads = "2"\nflush_intervall = 1\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.key == "log_level"
    assert str(info.value) == f"log_level: in {path}: expected a string, got 3 (and 2 more problems)"


def test_judge_keys_for_litellm(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(
        '[judge]\nmodel = " openai/m "\napi_key = "k"\nonly_when = "tool_error"\n'
        '[judge.extra]\nextra_headers = { x = "y" }\n'
    )
    judge = load_config(path).judge
    assert (judge.model, judge.only_when) == ("openai/m", ("tool_error",))
    assert judge.llm_kwargs == {"api_key": "k", "extra_headers": {"x": "y"}}


def test_a_file_over_a_base_changes_only_what_it_sets(tmp_path):
    base = default_config()
    base = dataclasses.replace(
        base, db="base.duckdb", writer=dataclasses.replace(base.writer, max_queue_records=7)
    )
    path = tmp_path / "c.toml"
    path.write_text('[writer]\nflush_interval = "10ms"\n[redaction]\nwhere = ["store"]\n')
    config = load_config(path, base)
    assert config.db == "base.duckdb"
    assert (config.writer.max_queue_records, config.writer.flush_interval) == (7, 0.01)
    assert config.redaction.enabled and config.redaction.where == (
        "store",
    )  # a [redaction] table turns it on


@pytest.mark.parametrize("worker", ["decode", "pipeline"])
def test_the_helper_processes_do_not_import_pydantic(worker):
    """They import the config's section types, but never read a file: pydantic would cost
    each of them memory."""
    code = (
        f"import sys, agentotel_eval.collector.{worker}.worker\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_auth_tls_and_limits_settings(tmp_path, monkeypatch):
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("x")
    key.write_text("y")
    path = tmp_path / "c.toml"
    path.write_text(
        f'[auth]\ntoken = "from-file"\n[tls]\ncert = "{cert}"\nkey = "{key}"\n'
        '[limits]\nmax_value_depth = 8\n[receiver]\nhttp_read_timeout = "5s"\n'
    )
    monkeypatch.delenv("AGENTOTEL_AUTH_TOKEN", raising=False)
    config = serve_cmd.build_config(_args(config=path))
    assert (config.auth.token, config.tls.cert, config.limits.max_value_depth) == ("from-file", str(cert), 8)
    assert config.receiver.http_read_timeout == 5.0
    monkeypatch.setenv("AGENTOTEL_AUTH_TOKEN", "from-env")
    assert serve_cmd.build_config(_args(config=path)).auth.token == "from-env"
    assert serve_cmd.build_config(_args(config=path, auth_token="from-flag")).auth.token == "from-flag"
    with pytest.raises(ConfigError, match=r"tls\.key"):
        serve_cmd.build_config(_args(tls_cert=cert))
    with pytest.raises(ConfigError, match="no such file"):
        serve_cmd.build_config(_args(tls_cert=cert, tls_key=tmp_path / "missing.pem"))
    bad = tmp_path / "bad.toml"
    bad.write_text("[limits]\nmax_spans_per_request = 0\n")
    with pytest.raises(ConfigError, match=r"limits\.max_spans_per_request"):
        load_config(bad).validate()
    bad.write_text("[limits]\nmax_depth = 3\n")
    with pytest.raises(ConfigError, match=r"limits\.max_depth: .*unknown setting"):
        load_config(bad)


def test_the_banner_tells_exporters_about_tls_and_the_token(tmp_path):
    from types import SimpleNamespace

    def collector(cert: str, token: str) -> SimpleNamespace:
        config = SimpleNamespace(tls=SimpleNamespace(cert=cert), auth=SimpleNamespace(token=token))
        scheme = "https" if cert else "http"
        return SimpleNamespace(
            config=config,
            grpc_endpoint="127.0.0.1:4317",
            http_endpoint=f"{scheme}://127.0.0.1:4318",
            db_path=tmp_path / "a.duckdb",
        )

    plain = serve_cmd.banner(collector("", ""))
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317" in plain and "token" not in plain
    assert "  web UI     http://127.0.0.1:4318/\n" in plain  # README says to open it
    guarded = serve_cmd.banner(collector("/etc/agentotel/cert.pem", "s3cret"))
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=https://127.0.0.1:4317" in guarded
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=https://127.0.0.1:4318" in guarded
    assert "certificate /etc/agentotel/cert.pem" in guarded
    assert "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20$AGENTOTEL_AUTH_TOKEN" in guarded
    assert "s3cret" not in guarded  # the token itself is never printed
    assert "web UI     https://127.0.0.1:4318/  (sign in with the token)" in guarded


def test_text_failure_signals_can_be_turned_off(tmp_path):
    assert default_config().reconstruction.text_failures is True
    path = tmp_path / "agentotel.toml"
    path.write_text("[reconstruction]\ntext_failures = false\n")
    assert load_config(path).reconstruction.text_failures is False
    path.write_text("[reconstruction]\ntext_failure = false\n")
    with pytest.raises(ConfigError, match="text_failure"):
        load_config(path)


def test_detector_rules_are_turned_off_by_their_registered_names() -> None:
    from agentotel_eval.collector.config_validation import config_from_mapping

    config = config_from_mapping(
        {
            "scoring": {"disabled_rules": ["sequence_error.ungrounded_argument"]},
            "tools": [{"name": "pay", "services": ["shop-*"], "agents": ["b2b"]}],
        }
    )
    assert config.scoring.disabled_rules == ("sequence_error.ungrounded_argument",)
    assert (config.tools[0].services, config.tools[0].agents) == (("shop-*",), ("b2b",))
    with pytest.raises(
        ConfigError, match=r"scoring.disabled_rules: unknown rule\(s\) \['sequence_error.ungrounded'\]"
    ):
        config_from_mapping({"scoring": {"disabled_rules": ["sequence_error.ungrounded"]}})
    with pytest.raises(ConfigError, match="services must be a list of names or globs"):
        config_from_mapping({"tools": [{"name": "pay", "services": [3]}]})
