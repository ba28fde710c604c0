"""Collector configuration: frozen data with defaults, a TOML loader that names bad keys, and ``validate()``.

Every flag of ``serve`` has a key here; a ``--config FILE`` sets any of them, and flags given on the command
line win over the file. Sections are nested dataclasses, so a later stage (scoring, forwarding) adds its
section by adding a field to ``CollectorConfig``: the loader (``config_validation``, pydantic) validates the
file against the type hints and the markers of ``config_fields``, and its errors name the key.

Durations are seconds or strings such as ``"500ms"``, ``"2s"``, ``"5m"``, ``"12h"``, ``"30d"``, ``"1w"``;
sizes are bytes or strings such as ``"20MiB"``, ``"512KB"``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from agentotel_eval import durations
from agentotel_eval.collector.config_fields import After, Before, Duration, Parsed, Size
from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.config_scoring import (
    JudgeSettings,
    ScoringConfig,
    ScoringSettings,
    checked_forward,
    forward_table,
    load_dataset,
    named_rules,
)
from agentotel_eval.collector.config_sinks import SinkConfig, SinkConfigError
from agentotel_eval.collector.expectations import ExpectationConfigError, ExpectationRule
from agentotel_eval.detectors.declarations import ToolRule, parse_tool_rules
from agentotel_eval.otlp.limits import Limits
from agentotel_eval.reconstruct.declared import Convention, conventions_from_config
from agentotel_eval.redaction import RedactionSettings
from agentotel_eval.store import DEFAULT_DB_PATH

if TYPE_CHECKING:
    from agentotel_eval.store.sealed import DuckDBSetting

MiB = 1024 * 1024


class ConfigError(ValueError):
    """An invalid setting; the message names the key (``writer.flush_interval``) and what is wrong."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.reason = message


def parse_duration(value: Any, key: str = "") -> float:
    """Seconds from a number or a string like ``"30d"`` (``agentotel_eval.durations``)."""
    try:
        return durations.parse_duration(value)
    except durations.DurationError as exc:
        raise ConfigError(key, str(exc)) from None


def parse_size(value: Any, key: str = "") -> int:
    """Bytes from a number or a string like ``"20MiB"`` (``agentotel_eval.durations``)."""
    try:
        return durations.parse_size(value)
    except durations.SizeError as exc:
        raise ConfigError(key, str(exc)) from None


def parse_address(value: str, key: str = "") -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:4317`` for IPv6) into its parts; port 0 asks the system for a free port."""
    text = str(value).strip()
    if text.startswith("http://") or text.startswith("https://"):
        raise ConfigError(key, f"expected HOST:PORT without a scheme, got {value!r}")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(key, f"expected HOST:PORT (e.g. 127.0.0.1:4317), got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", int(port)


@dataclass(frozen=True, slots=True)
class ReceiverConfig:
    #: largest accepted request, compressed or inflated (the OpenTelemetry Collector's HTTP default: 20 MiB)
    max_request_size: Annotated[int, Size] = 20 * MiB
    #: threads serving gRPC calls; each waits for its commit, so this caps concurrent gRPC exports
    grpc_workers: int = 8
    #: processes that decode requests (``agentotel_eval.collector.decode.worker``), so that the collector's
    #: own process, which holds the DuckDB writer, does no per-span Python; 0 decodes on the receivers'
    #: threads in this process
    decode_workers: int = 1
    #: requests being decoded at the same time, across both receivers: caps the memory of requests in decoding
    #: (a 20 MiB request decodes to several times its size); with decode workers, one more than them keeps
    #: each busy while the next request travels to it
    decode_slots: int = 2
    #: how long an export call waits for its records to be committed before answering UNAVAILABLE / 503
    export_timeout: Annotated[float, Duration] = 30.0
    #: the delay suggested to exporters when the write queue is full (Retry-After / gRPC RetryInfo)
    retry_after: Annotated[float, Duration] = 1.0
    #: an idle HTTP keep-alive connection is closed after this long
    http_idle_timeout: Annotated[float, Duration] = 60.0
    #: a request must arrive whole (headers and body) within this long of its first byte, or the connection is
    #: closed: a client sending a byte a second, or less than its Content-Length, cannot hold a thread longer
    http_read_timeout: Annotated[float, Duration] = 30.0
    #: open HTTP connections at most (each holds a thread); a connection beyond it is answered 503 and closed
    http_max_connections: int = 256


@dataclass(frozen=True, slots=True)
class AuthConfig:
    #: a bearer token every request must carry (``Authorization: Bearer <token>``, gRPC metadata
    #: ``authorization``), except ``GET /healthz``; empty: no authentication. ``AGENTOTEL_AUTH_TOKEN`` and
    #: ``--auth-token`` set it too
    token: str = ""


@dataclass(frozen=True, slots=True)
class TlsConfig:
    #: PEM certificate (chain) and private key: both listeners serve TLS (gRPC with TLS credentials, HTTPS)
    cert: str = ""
    key: str = ""


@dataclass(frozen=True, slots=True)
class WriterConfig:
    #: records (spans + log records) queued for a commit, plus rows of runs not yet written, before exporters
    #: are told to retry (the assembler's backlog has its own bound, ``assembler.max_backlog_records``)
    max_queue_records: int = 50_000
    #: at most this many records per transaction
    max_batch_records: int = 20_000
    #: how long the writer lingers for more requests to share a commit
    flush_interval: Annotated[float, Duration] = 0.005
    #: how long it may linger instead while requests are being decoded and the commit is short of a whole row
    #: group (``row_group_size``): fewer, larger commits (one whole group is written straight into the file)
    max_linger: Annotated[float, Duration] = 0.05
    #: DuckDB's WAL size that triggers a checkpoint. Rows appended since the last checkpoint stay in memory
    #: uncompressed, so this also bounds that memory; larger means fewer but longer checkpoints.
    checkpoint_threshold: str = "16MB"
    #: DuckDB returns freed memory to the system above this peak (its default, 128MB, keeps a lot resident)
    allocator_flush_threshold: str = "16MB"
    #: DuckDB's row-group merges at each checkpoint (its default: 100). A commit rarely fills its last row
    #: group exactly, and merging those partial row groups rewrites them at every checkpoint. At 0 they stay
    #: as written; row groups that retention empties are still dropped and their space reused
    max_vacuum_tasks: int = 0
    #: DuckDB memory limit (empty: DuckDB's default, 80% of RAM). DuckDB otherwise keeps the rows it wrote
    #: cached as they grow; past the limit it evicts them, and queries that need more spill to a
    #: temporary directory
    memory_limit: str = "96MB"
    #: DuckDB worker threads (0: DuckDB's default, one per core)
    threads: int = 0
    #: rows per DuckDB row group (a multiple of 2048; 0: DuckDB's default, 122,880). A commit of a whole row
    #: group is written straight into the file instead of the write-ahead log, but DuckDB keeps memory of
    #: every row group until the database is closed, and smaller groups were no faster under load
    row_group_size: int = 122_880
    #: close and reopen the database after this many stored records (0: never). DuckDB keeps memory of every
    #: write until the database is closed; a reopen gives it back and pauses writing for ~0.1 s
    reopen_rows: int = 250_000

    def duckdb_settings(self) -> dict[str, DuckDBSetting]:
        """The DuckDB settings the writer opens its database with (the benchmarks open
        theirs the same way)."""
        settings: dict[str, DuckDBSetting] = {
            "checkpoint_threshold": self.checkpoint_threshold,
            "allocator_flush_threshold": self.allocator_flush_threshold,
            "max_vacuum_tasks": self.max_vacuum_tasks,
        }
        if self.memory_limit:
            settings["memory_limit"] = self.memory_limit
        if self.threads:
            settings["threads"] = self.threads
        return settings


@dataclass(frozen=True, slots=True)
class AssemblerConfig:
    #: a trace is complete when its run span arrived and no span of it arrived for this long
    grace_period: Annotated[float, Duration] = 2.0
    #: a trace whose run/root span never arrives is completed this long after its first span
    max_wait: Annotated[float, Duration] = 60.0
    #: open traces kept in memory; over it, the oldest complete early (counted)
    max_open_traces: int = 20_000
    #: spans and log records of open traces (the assembler keeps a mark of ~100 bytes of each, and reads the
    #: records back once a trace is complete); over it, the oldest traces complete early
    max_buffered_records: int = 250_000
    #: records committed but not yet taken by the assembler (it is behind); over it,
    #: exporters are told to retry
    max_backlog_records: int = 200_000
    #: completed traces remembered so a late span re-builds its runs (their spans are re-read from the
    #: database): at most this many, and at least the latest half of it (``trace_buffer.DecisionCache``)
    decision_cache_traces: int = 100_000
    #: how far around a trace's known spans to look for its stored spans when re-reading it
    late_window: Annotated[float, Duration] = 60.0
    #: completed traces are read back from the database together, at most this often: a read scans its time
    #: window whatever it returns, so fewer, larger reads cost less (runs are written up to this much later)
    read_interval: Annotated[float, Duration] = 0.25
    #: assemble, reconstruct and score in a second process (the collector's receivers and writer keep this
    #: one's interpreter to themselves: both are CPU-bound Python, and one process runs Python on one core at
    #: a time); false runs them on a thread of the collector's process
    process: bool = True


@dataclass(frozen=True, slots=True)
class ReconstructionConfig:
    #: a tool result that reads as an error report ("Error: ...", MCP's "Error executing tool ...") makes its
    #: call a failed one where no ERROR status says so; false: only recorded statuses and
    #: structured results decide
    text_failures: bool = True


@dataclass(frozen=True, slots=True)
class QueryConfig:
    #: rows returned by one query at most
    row_limit: int = 10_000
    #: seconds before a query is interrupted
    timeout: Annotated[float, Duration] = 30.0


@dataclass(frozen=True, slots=True)
class MetricsConfig:
    #: (service, agent) pairs with label values of their own in ``agentotel_evaluations_total`` and
    #: ``agentotel_tool_errors_total``; later agents are counted as ``agent="other"``
    max_agents: int = 50


@dataclass(frozen=True, slots=True)
class LakeS3Config:
    #: host:port of an S3-compatible server (MinIO, moto); empty: AWS
    endpoint: str = ""
    key_id: str = ""
    secret: str = ""
    region: str = "us-east-1"
    #: "path" for most S3-compatible servers, "vhost" for AWS
    url_style: str = "vhost"
    use_ssl: bool = True


@dataclass(frozen=True, slots=True)
class LakeConfig:
    """``[lake]``: the DuckLake this node copies what it committed to, shared with other nodes."""

    #: the catalog: ``postgres://user:password@host:port/dbname``
    #: (``sqlite:/path/catalog.sqlite`` for one machine)
    catalog: str = ""
    #: where the Parquet data goes: ``s3://bucket/prefix/`` or a directory
    data: str = ""
    #: how often committed rows are copied to the lake
    flush_interval: Annotated[float, Duration] = 5.0
    #: this node's name in the lake's rows (default: the host name)
    node: str = ""
    #: how often this node looks for traces that several nodes stored, to rebuild them whole; 0: never
    reconcile_interval: Annotated[float, Duration] = 10.0
    #: while nodes join or leave, read other nodes' parts of an incomplete trace from the lake to assemble it
    #: whole (never when forwarding: this node would forward their spans too)
    read_peer_spans: bool = True
    #: how long an operation on the catalog's server or S3 may wait for an answer before it fails (a flush
    #: then fails, is logged and retried)
    timeout: Annotated[float, Duration] = 30.0
    #: /healthz says "degraded" (and /readyz answers 503) when the oldest row not yet
    #: copied is older than this
    max_lag: Annotated[float, Duration] = 60.0
    s3: LakeS3Config = field(default_factory=LakeS3Config)

    def settings(self) -> Any:
        from agentotel_eval.store.lake import LakeSettings, S3Settings

        s3 = self.s3
        return LakeSettings(
            self.catalog,
            self.data,
            S3Settings(s3.endpoint, s3.key_id, s3.secret, s3.region, s3.url_style, s3.use_ssl),
            self.timeout,
        )

    def node_name(self) -> str:
        import socket

        return self.node or socket.gethostname()


@dataclass(frozen=True, slots=True)
class CollectorConfig:
    db: str = DEFAULT_DB_PATH
    grpc: str = "127.0.0.1:4317"
    http: str = "127.0.0.1:4318"
    #: downstream OTLP endpoint: ``forward = "grpc://host:4317"`` or a ``[forward]`` table (url, protocol,
    #: headers, timeout_s, max_queue_records, max_batch_records, max_retries, initial_backoff_s,
    #: max_backoff_s); spans go on with their scores
    forward: Annotated[ForwardConfig | None, Before(forward_table), After(checked_forward)] = None
    #: ``[scoring]``: enabled, modes (default/exact/ordering), threshold, detectors
    scoring: ScoringSettings = field(default_factory=ScoringSettings)
    #: ``[judge]``: the LLM judge (model, sample_rate, error_types, threshold, max_concurrency,
    #: max_cost_usd_per_day, only_when, timeout_s, max_retries, api_base, api_key, api_version, extra,
    #: cache_dir); off if absent
    judge: JudgeSettings | None = None
    #: ``[[expectations]]`` rules: name, agent / service globs, input_regex, expected_tools, modes
    expectations: Annotated[tuple[ExpectationRule, ...], After(named_rules)] = ()
    #: ``[[conventions]]``: an in-house instrumentation's spans declared as tool executions or agent runs
    #: (name, role, when, and the attribute of each field), read before the built-in conventions
    conventions: Annotated[tuple[Convention, ...], Parsed(conventions_from_config)] = ()
    #: ``[[tools]]``: per-tool declarations for the detectors (name, requires, args matchers, claims)
    tools: Annotated[tuple[ToolRule, ...], Parsed(parse_tool_rules)] = ()
    #: JSONL file of {"input", "expected_tools"} matched on a run's input
    dataset: str = ""
    #: delete data older than this (e.g. "30d"); empty keeps everything
    retention: str = ""
    log_level: str = "info"
    receiver: ReceiverConfig = field(default_factory=ReceiverConfig)
    writer: WriterConfig = field(default_factory=WriterConfig)
    assembler: AssemblerConfig = field(default_factory=AssemblerConfig)
    #: ``[reconstruction]``: text_failures (read an "Error: ..." tool result as a failed call)
    reconstruction: ReconstructionConfig = field(default_factory=ReconstructionConfig)
    query: QueryConfig = field(default_factory=QueryConfig)
    #: ``[[sinks]]``: tools that also get each evaluation as their own object (kind = phoenix | mlflow |
    #: langfuse, url, api_key_env / experiment / public_key_env and secret_key_env, forward_spans, max_queue,
    #: max_batch, max_retries, initial_backoff, max_backoff, timeout, cpu_share)
    sinks: tuple[SinkConfig, ...] = ()
    #: ``[metrics]``: max_agents (the label bound of the quality metrics on /metrics)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    #: ``[lake]``: a DuckLake shared by several nodes (catalog, data, flush_interval, node,
    #: reconcile_interval, read_peer_spans, ``[lake.s3]``); off
    #: if absent
    lake: LakeConfig | None = None
    auth: AuthConfig = field(default_factory=AuthConfig)
    tls: TlsConfig = field(default_factory=TlsConfig)
    #: ``[limits]``: bounds on one request's attributes, values, nesting, spans
    #: (``agentotel_eval.otlp.limits``)
    limits: Limits = field(default_factory=Limits)
    #: ``[redaction]``: secrets and personal data replaced by markers before they are stored, shown to the
    #: judge or forwarded (enabled, where, builtin, secret_keys, ``[[redaction.patterns]]`` name and regex)
    redaction: Annotated[RedactionSettings, Parsed(RedactionSettings.from_dict)] = field(
        default_factory=RedactionSettings
    )

    # How the loader validates a file: exact types (no "5" for 5, no 1 for true), unknown keys are errors. The
    # sections inherit it; pydantic reads it from this plain dict, so importing the config needs no pydantic.
    __pydantic_config__: ClassVar[dict[str, Any]] = {"strict": True, "extra": "forbid"}

    def scoring_config(self) -> ScoringConfig:
        """What the scoring stage and the judge worker need (loads the dataset file)."""
        return ScoringConfig(
            self.scoring, self.judge, self.forward, self.expectations, load_dataset(self.dataset), self.tools
        )

    @property
    def retention_seconds(self) -> float | None:
        return parse_duration(self.retention, "retention") if self.retention else None

    @property
    def grpc_address(self) -> tuple[str, int]:
        return parse_address(self.grpc, "grpc")

    @property
    def http_address(self) -> tuple[str, int]:
        return parse_address(self.http, "http")

    def validate(self) -> CollectorConfig:
        """Raise ``ConfigError`` naming the first bad key; returns self so calls chain."""
        if not str(self.db).strip():
            raise ConfigError("db", "the database path is empty")
        self.grpc_address  # noqa: B018 - parses or raises
        self.http_address  # noqa: B018
        if self.grpc_address == self.http_address and self.http_address[1] != 0:
            raise ConfigError("http", f"gRPC and HTTP cannot share the address {self.http}")
        try:
            self.scoring_config()
        except ExpectationConfigError as exc:
            raise ConfigError("dataset", str(exc)) from None
        if self.retention and (self.retention_seconds or 0) <= 0:
            raise ConfigError(
                "retention", f'must be a positive duration such as "30d", got {self.retention!r}'
            )
        if self.lake is not None:
            _check_lake(self.lake)
        for i, sink in enumerate(self.sinks):
            try:
                sink.validate()
            except SinkConfigError as exc:
                raise ConfigError(f"sinks[{i}].{exc.key}", str(exc)) from None
        _positive(self, "metrics", "max_agents")
        if self.log_level.lower() not in ("debug", "info", "warning", "error"):
            raise ConfigError("log_level", f"expected debug, info, warning or error, got {self.log_level!r}")
        _positive(
            self,
            "receiver",
            "max_request_size",
            "grpc_workers",
            "export_timeout",
            "http_idle_timeout",
            "decode_slots",
            "http_read_timeout",
            "http_max_connections",
        )
        if self.receiver.decode_workers < 0:
            raise ConfigError("receiver.decode_workers", "must not be negative")
        if self.receiver.retry_after < 0:
            raise ConfigError("receiver.retry_after", "must not be negative")
        _positive(self, "writer", "max_queue_records", "max_batch_records")
        if self.writer.flush_interval < 0:
            raise ConfigError("writer.flush_interval", "must not be negative")
        if self.writer.max_linger < 0:
            raise ConfigError("writer.max_linger", "must not be negative")
        if self.writer.threads < 0:
            raise ConfigError("writer.threads", "must not be negative")
        if self.writer.max_vacuum_tasks < 0:
            raise ConfigError("writer.max_vacuum_tasks", "must not be negative")
        if self.writer.reopen_rows < 0:
            raise ConfigError("writer.reopen_rows", "must not be negative (0: never reopen)")
        if self.writer.row_group_size < 0 or self.writer.row_group_size % 2048:
            raise ConfigError(
                "writer.row_group_size",
                f"must be 0 or a multiple of 2048 (DuckDB's vector size), got {self.writer.row_group_size}",
            )
        for key in ("checkpoint_threshold", "allocator_flush_threshold", "memory_limit"):
            value = getattr(self.writer, key)
            if value:
                parse_size(value, f"writer.{key}")
        _positive(
            self,
            "assembler",
            "grace_period",
            "max_wait",
            "max_open_traces",
            "max_buffered_records",
            "max_backlog_records",
            "decision_cache_traces",
            "late_window",
        )
        if self.assembler.read_interval < 0:
            raise ConfigError("assembler.read_interval", "must not be negative")
        _positive(self, "query", "row_limit", "timeout")
        bad = self.limits.check()
        if bad:
            raise ConfigError(f"limits.{bad[0]}", "must be a positive integer")
        if self.auth.token != self.auth.token.strip() or any(c.isspace() for c in self.auth.token):
            raise ConfigError("auth.token", "must not contain spaces (it is sent in an HTTP header)")
        if bool(self.tls.cert) != bool(self.tls.key):
            raise ConfigError(
                "tls.cert" if not self.tls.cert else "tls.key",
                "give both the certificate and its private key (--tls-cert and --tls-key)",
            )
        for key in ("cert", "key"):
            path = getattr(self.tls, key)
            if path and not Path(path).expanduser().is_file():
                raise ConfigError(f"tls.{key}", f"no such file: {path}")
        return self


def _check_lake(lake: LakeConfig) -> None:
    from agentotel_eval.store.lake import LakeError, catalog_target, check_node_name

    if not lake.catalog.strip():
        raise ConfigError("lake.catalog", "name the catalog: postgres://user:password@host:port/dbname")
    if not lake.data.strip():
        raise ConfigError("lake.data", "name where the data goes: s3://bucket/prefix/ or a directory")
    try:
        catalog_target(lake.catalog)
    except LakeError as exc:
        raise ConfigError("lake.catalog", str(exc).partition(": ")[2] or str(exc)) from None
    if "://" in lake.data and not lake.data.startswith("s3://"):
        raise ConfigError("lake.data", f"an s3:// URL or a directory, got {lake.data!r}")
    if lake.flush_interval <= 0:
        raise ConfigError("lake.flush_interval", "must be positive")
    if lake.reconcile_interval < 0:
        raise ConfigError("lake.reconcile_interval", "must be 0 (off) or positive")
    if lake.timeout <= 0:
        raise ConfigError("lake.timeout", "must be positive")
    if lake.max_lag < lake.flush_interval:
        raise ConfigError(
            "lake.max_lag", "must be at least flush_interval (the lag of a healthy node reaches it)"
        )
    try:
        check_node_name(lake.node)
    except LakeError as exc:
        raise ConfigError("lake.node", str(exc).partition(": ")[2]) from None
    if lake.s3.url_style not in ("path", "vhost"):
        raise ConfigError("lake.s3.url_style", f'expected "path" or "vhost", got {lake.s3.url_style!r}')


def _positive(config: CollectorConfig, section: str, *keys: str) -> None:
    part = getattr(config, section)
    for key in keys:
        value = getattr(part, key)
        if not value > 0:
            raise ConfigError(f"{section}.{key}", f"must be greater than 0, got {value!r}")


def default_config() -> CollectorConfig:
    return CollectorConfig()


def load_config(path: str | Path, base: CollectorConfig | None = None) -> CollectorConfig:
    """Read a TOML file over ``base`` (the defaults); errors name the file and the key."""
    # pydantic is imported only where a file is read: the helper processes import this module too
    from agentotel_eval.collector.config_validation import config_from_mapping

    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("", f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot read config file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("", f"{path} is not valid TOML: {exc}") from None
    try:
        return config_from_mapping(data, base or default_config())
    except ConfigError as exc:
        raise ConfigError(exc.key, f"in {path}: {exc.reason}") from None
