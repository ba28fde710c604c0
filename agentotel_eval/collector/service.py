"""The collector service: wires receivers -> ingest -> writer -> assembler -> [stages] -> run writer.

The parts it wires each live in a module of their own: the stages in their packages, what happens after a commit
in ``after_commit``, ``/healthz`` in ``health``, ``/metrics`` in ``prometheus_registry``, retention and the
summary line in ``housekeeping``, the lake's waits in ``lake.timing``.

``Collector(config).start()`` opens the database, starts every stage and binds the ports; ``shutdown()`` stops
accepting, lets requests in flight commit, completes every open trace, writes the last runs and closes the
database cleanly. Both are idempotent. Usable in-process (tests, embedding) or through ``agentotel-eval serve``.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import os
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from agentotel_eval.access import discovery
from agentotel_eval.collector.after_commit import AfterCommit, RunsCommitted
from agentotel_eval.collector.assemble.assembler import Reconstruct
from agentotel_eval.collector.config import CollectorConfig
from agentotel_eval.collector.decode.batch import decode_request
from agentotel_eval.collector.decode.pool import DecodePool
from agentotel_eval.collector.forward.forwarder import Forwarder
from agentotel_eval.collector.health import health_report
from agentotel_eval.collector.housekeeping import Housekeeping
from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.health import lake_health
from agentotel_eval.collector.lake.peer_spans import PeerReader, PeerSpans
from agentotel_eval.collector.lake.reconciler import Reconciler
from agentotel_eval.collector.lake.timing import away_after, quiet_after, start_reconciler
from agentotel_eval.collector.pipeline.assembly import AssemblyStage, LocalAssembly, StageFactory
from agentotel_eval.collector.pipeline.helper_proxy import ProcessAssembly
from agentotel_eval.collector.process.supervisor import Supervisor
from agentotel_eval.collector.process.tuning import TUNED, Tuning
from agentotel_eval.collector.prometheus_registry import exposition, prometheus_registry
from agentotel_eval.collector.receive.auth import Authenticator
from agentotel_eval.collector.receive.grpc import GrpcReceiver
from agentotel_eval.collector.receive.http.app import HttpApp, HttpReceiver
from agentotel_eval.collector.receive.http.server import server_tls_context
from agentotel_eval.collector.receive.ingest import Ingestor
from agentotel_eval.collector.receive.ports import check_free
from agentotel_eval.collector.score.judge_worker import JudgeWorker
from agentotel_eval.collector.sink.feed import stored_runs
from agentotel_eval.collector.sink.hub import SinkHub
from agentotel_eval.collector.store.database import Database, DatabaseClosed
from agentotel_eval.collector.store.operations import DeleteOlderThan
from agentotel_eval.collector.store.reader import TraceReader
from agentotel_eval.collector.store.runs import RunWriter
from agentotel_eval.collector.store.writer import StoreWriter, WriterSettings
from agentotel_eval.collector.ui.routes import UiPages
from agentotel_eval.collector.ui.web import WebUi
from agentotel_eval.reconstruct.declared import BUILTIN
from agentotel_eval.redaction import Redactor
from agentotel_eval.store.query import QueryError, QueryResult, QueryUnavailable, run_query

log = logging.getLogger("agentotel.collector")


def is_loopback(host: str) -> bool:
    """Whether a listener on ``host`` is reachable only from this machine (a wildcard bind is not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost


def _where(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Collector:
    """One collector instance. ``stages`` wrap the run writer, outermost first: each gets the next stage. It never
    changes process-wide settings of the process it runs in."""

    def __init__(
        self,
        config: CollectorConfig,
        *,
        stages: Sequence[StageFactory] = (),
        reconstruct: Reconstruct | None = None,
        summary_interval: float = 60.0,
        tuning: Tuning = TUNED,
    ) -> None:
        self.config = config.validate()
        #: how the helper processes tune themselves; this process is its owner's (``agentotel-eval serve`` tunes
        #: its own with the same settings, see ``agentotel_eval.collector.process.tuning``)
        self.tuning = tuning
        self.db_path = Path(config.db).expanduser().resolve()
        self._stage_factories = tuple(stages)
        self._reconstruct = reconstruct
        self._summary_interval = summary_interval
        self._started_at = 0.0
        self._token = discovery.new_token()
        self._lock = threading.Lock()
        self._query_lock = threading.Lock()
        self._rescore_lock = threading.Lock()
        self._state = "new"
        self.housekeeping: Housekeeping | None = None
        self.query_counts: dict[str, int] = {}
        self.database: Any = None  # Database once started
        self.lake: LakeFlusher | None = None  # with [lake]: copies what this node commits to the shared lake
        self.reconciler: Reconciler | None = None  # with [lake]: rebuilds traces several nodes stored
        self.peers: PeerSpans | None = (
            None  # with [lake]: other nodes' parts of a split trace, read to assemble it
        )
        self.writer: StoreWriter
        self.after_commit: AfterCommit
        self.assembler: AssemblyStage
        self._assembler_started = False
        self.ingestor: Ingestor
        self.run_writer: RunWriter
        self.forwarder: Forwarder | None = None
        #: score sinks and the quality counters of /metrics, fed after each commit (``collector.sink``)
        self.sinks: SinkHub | None = None
        self.judge: JudgeWorker | None = None
        self.decoders: DecodePool | None = None
        self.http: HttpReceiver
        self.ui: UiPages
        self.grpc: GrpcReceiver
        self._telemetry: CollectorRegistry
        #: the bearer token check (``[auth] token``); None: no authentication
        self.auth = Authenticator(config.auth.token) if config.auth.token else None

    # ---- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> Collector:
        with self._lock:
            if self._state != "new":
                return self
            self._state = "starting"
        cfg = self.config
        try:
            # the ports first: a start that cannot listen must not create the database and its lock
            check_free(*cfg.grpc_address, "OTLP/gRPC", "grpc")
            check_free(*cfg.http_address, "OTLP/HTTP", "http")
            if cfg.lake is not None:  # a node that cannot use its lake does not create its file either
                self.lake = LakeFlusher(
                    cfg.lake.settings(), cfg.lake.node_name(), self._cursor, cfg.lake.flush_interval
                )
                self.lake.connect()
            self.database = Database(
                self.db_path, settings=cfg.writer.duckdb_settings(), row_group_size=cfg.writer.row_group_size
            )
        except BaseException:
            if self.lake is not None:
                self.lake.close(final=False)
            with self._lock:
                self._state = "stopped"
            raise
        try:
            scoring_config = cfg.scoring_config()
            if cfg.forward is not None:
                self.forwarder = Forwarder(cfg.forward, redactor=self._redactor("forward"))
                self.forwarder.start()
            self._start_sinks(cfg)
            self.after_commit = AfterCommit(
                consume=lambda spans, logs, at: self.assembler.consume(spans, logs, at),
                submit_operation=lambda op: self.writer.submit_operation(op),
                forwarder=self.forwarder,
                sinks=self.sinks,
            )
            self.writer = StoreWriter(
                self.database.connection,
                WriterSettings.from_config(cfg.writer, cfg.receiver),
                on_commit=self.after_commit,
                incoming=lambda: self.ingestor.decoding,
                reopen=self.database.reopen,
            )
            forwarder = self.forwarder
            forward = forwarder.submit_spans if forwarder else None
            if cfg.judge is not None:
                self.judge = JudgeWorker(
                    cfg.judge,
                    self.writer,
                    self._cursor,
                    forward_spans=forward,
                    forward_logs=forwarder.submit_logs if forwarder else None,
                    redactor=self._redactor("judge"),
                    on_written=self.sinks.evaluation_written if self.sinks is not None else None,
                )
            self.run_writer = RunWriter(
                self.writer, on_committed=RunsCommitted(judge=self.judge, sinks=self.sinks)
            )
            # On a lake, a trace split between nodes is read whole (other nodes' parts added); not when forwarding:
            # this node would forward the other nodes' spans too.
            self._trace_reader = (
                PeerReader(self._cursor)
                if cfg.lake is not None and cfg.lake.read_peer_spans and forward is None
                else TraceReader(self._cursor)
            )
            if self.in_process:
                self.assembler = LocalAssembly(
                    cfg.assembler,
                    scoring_config,
                    self._trace_reader,
                    self.run_writer,
                    forward=forward,
                    stages=self._stage_factories,
                    reconstruct=self._reconstruct,
                    conventions=cfg.conventions,
                    text_failures=cfg.reconstruction.text_failures,
                )
            else:
                self.assembler = ProcessAssembly(
                    cfg.assembler,
                    scoring_config,
                    self._trace_reader,
                    self.run_writer,
                    forward=forward,
                    tuning=self.tuning,
                    conventions=cfg.conventions,
                    text_failures=cfg.reconstruction.text_failures,
                )
            # the records of the spans: for [forward]; for the sinks only where a request's body cannot go on as is
            forwarding: bool | str = forward is not None or (
                self.sinks is not None and self.sinks.forwards_spans and self.sinks.keep_records
            )
            if cfg.receiver.decode_workers:
                self.decoders = DecodePool(
                    cfg.receiver.decode_workers,
                    keep_spans=forwarding,
                    log_level=log.getEffectiveLevel(),
                    tuning=self.tuning,
                    conventions=cfg.conventions,
                    limits=cfg.limits,
                    redaction=cfg.redaction if cfg.redaction.applies("store") else None,
                )
                self.decoders.start()
                pool, timeout = self.decoders, cfg.receiver.export_timeout
                decoder = lambda signal, encoding, body: pool.decode(signal, encoding, body, timeout)  # noqa: E731
            else:
                decoder = functools.partial(
                    decode_request,
                    keep_spans=forwarding,
                    conventions=BUILTIN.plus(cfg.conventions),
                    limits=cfg.limits,
                    redactor=self._redactor("store"),
                )
            if self.sinks is not None and self.sinks.forwards_spans:
                decoder = self._keeping_raw(decoder, self.sinks)
            self.ingestor = Ingestor(
                self.writer,
                decoder=decoder,
                export_timeout=cfg.receiver.export_timeout,
                backlog=lambda: self.writer.pending_operation_rows,
                overloaded=self._assembler_overloaded,
                cpu_slots=cfg.receiver.decode_slots,
            )
            self.writer.start()
            self.assembler.start()
            self._assembler_started = True
            if self.judge is not None:
                self.judge.start()
            http_host, http_port = cfg.http_address
            cert, key = self.tls_files
            self.ui = UiPages(self.read)
            self.http = HttpReceiver(
                http_host,
                http_port,
                HttpApp(
                    ingestor=self.ingestor,
                    max_request_size=cfg.receiver.max_request_size,
                    query=self.query,
                    rescore=self._http_rescore,
                    ui=WebUi(self.ui),
                    health=self.health,
                    metrics=self.metrics_text,
                    idle_timeout=cfg.receiver.http_idle_timeout,
                    read_timeout=cfg.receiver.http_read_timeout,
                    max_connections=cfg.receiver.http_max_connections,
                    auth=self.auth,
                    tls=server_tls_context(cert, key) if cert else None,
                ),
            )
            grpc_host, grpc_port = cfg.grpc_address
            self.grpc = GrpcReceiver(
                grpc_host,
                grpc_port,
                self.ingestor,
                workers=cfg.receiver.grpc_workers,
                max_request_size=cfg.receiver.max_request_size,
                auth=self.auth,
                tls=(Path(cert).read_bytes(), Path(key).read_bytes()) if cert else None,
                idle_timeout=cfg.receiver.http_idle_timeout,
                handshake_timeout=cfg.receiver.http_read_timeout,
            )
            if cfg.lake is not None and self.lake is not None:  # before listening
                self.lake.open()
                self.lake.start()
                # one machine's lake (a SQLite catalog) has one node: no trace can be split between nodes
                several = cfg.lake.settings().sqlite_file is None
                if cfg.lake.reconcile_interval > 0 and several:
                    self.reconciler = start_reconciler(cfg)
                if isinstance(self._trace_reader, PeerReader) and several:
                    self.peers = self._trace_reader.peers = PeerSpans(
                        cfg.lake.settings(),
                        cfg.lake.node_name(),
                        away=away_after(cfg.lake),
                        quiet=quiet_after(cfg),
                    )
            self._telemetry = prometheus_registry(
                ingestor=self.ingestor,
                http_stats=self.http.stats,
                auth=self.auth,
                writer=self.writer,
                database_open=lambda: self.database is not None and self.database.is_open,
                assembler=self.assembler,
                judge=self.judge,
                external_logs=lambda: self.after_commit.external_log_evaluations,
                retention_deleted=lambda: dict(self.retention_deleted),
                queries=lambda: dict(self.query_counts),
                uptime=lambda: self.uptime,
                forwarder=self.forwarder,
                lake=self.lake,
                reconciler=self.reconciler,
                peers=self.peers,
                sinks=self.sinks,
                helpers=self.helpers,
            )
            self.http.start()
            self.grpc.start()
        except BaseException:
            self._close_partial()
            raise
        self._started_at = time.monotonic()
        self._warn_if_exposed()
        info = discovery.CollectorInfo(
            pid=os.getpid(),
            http=discovery.client_address(*self.http.address),
            db=str(self.db_path),
            token=self._token,
            grpc=discovery.client_address(*self.grpc.address),
            started_at=datetime.now(UTC).isoformat(),
            scheme="https" if cert else "http",
            cert=cert,
        )
        discovery.write_sidecar(self.db_path, info)
        discovery.register(info)  # found by commands run elsewhere
        self.housekeeping = Housekeeping(
            self.writer,
            self.assembler,
            retention_seconds=cfg.retention_seconds,
            summary_interval=self._summary_interval,
        )
        self.housekeeping.start()
        with self._lock:
            self._state = "running"
        return self

    @property
    def tls_files(self) -> tuple[str, str]:
        """The TLS certificate and key, as absolute paths; empty without TLS."""
        tls = self.config.tls
        if not tls.cert:
            return "", ""
        return str(Path(tls.cert).expanduser().resolve()), str(Path(tls.key).expanduser().resolve())

    def _warn_if_exposed(self) -> None:
        """A listener other machines can reach, with no token, hands every stored prompt and tool result to them."""
        http_host, grpc_host = self.config.http_address[0], self.config.grpc_address[0]
        http_where = _where(http_host, self.http.address[1])
        grpc_where = _where(grpc_host, self.grpc.address[1])
        if self.auth is None:
            if not is_loopback(http_host):
                log.warning(
                    "no auth token: anyone who can reach %s can write spans and read every stored prompt, "
                    "tool argument and result through /v1/query and the web UI; set --auth-token or "
                    "AGENTOTEL_AUTH_TOKEN",
                    http_where,
                )
            if not is_loopback(grpc_host):
                log.warning(
                    "no auth token: anyone who can reach %s (OTLP/gRPC) can write spans into %s; set "
                    "--auth-token or AGENTOTEL_AUTH_TOKEN",
                    grpc_where,
                    self.db_path,
                )
        elif not self.config.tls.cert and not (is_loopback(http_host) and is_loopback(grpc_host)):
            log.warning(
                "the auth token is sent in clear text to %s: anyone on the network path can read it; "
                "serve TLS with --tls-cert and --tls-key",
                " and ".join(
                    w for h, w in ((http_host, http_where), (grpc_host, grpc_where)) if not is_loopback(h)
                ),
            )

    def _redactor(self, place: str) -> Redactor | None:
        """The redactor of one place (store, judge, forward), or None where ``[redaction]`` does not apply."""
        settings = self.config.redaction
        return Redactor(settings) if settings.applies(place) else None

    def _close_partial(self) -> None:
        for name in ("grpc", "http", "ui"):
            part = getattr(self, name, None)
            if part is not None:
                try:
                    part.close() if name == "ui" else part.shutdown()
                except Exception:
                    log.exception("stopping %s", name)
        if self.judge is not None:
            self.judge.shutdown(0)
        if self.decoders is not None:
            self.decoders.shutdown()
        if getattr(self, "assembler", None) is not None and self._assembler_started:
            self.assembler.shutdown()
        if getattr(self, "writer", None) is not None:
            self.writer.shutdown()
        if self.forwarder is not None:
            self.forwarder.shutdown(0)
        if self.sinks is not None:
            self.sinks.shutdown(0)
        if self.reconciler is not None:
            self.reconciler.close()
        if self.peers is not None:
            self.peers.close()
        if self.lake is not None:
            self.lake.close(final=False)
        if self.database is not None:
            self.database.close()
            self.database = None
        with self._lock:
            self._state = "stopped"

    def shutdown(self, grace: float = 10.0) -> None:
        """Stop accepting, commit what is in flight, complete open traces, close the database. Idempotent."""
        with self._lock:
            if self._state != "running":
                return
            self._state = "stopping"
        started = time.monotonic()
        if self.housekeeping is not None:
            self.housekeeping.stop(0)
        grpc_done = self.grpc.stop_accepting(grace)
        self.http.stop_accepting()
        if grpc_done is not None:
            grpc_done.wait(grace + 1)
        self.writer.flush(grace)  # HTTP requests still in flight finish their commits here
        self.writer.stop_accepting()
        self.writer.flush(grace)
        if self.decoders is not None:
            self.decoders.shutdown()
        if self.judge is not None:
            self.judge.shutdown(min(grace, 5.0))  # answers not back by then stay pending for the next start
        self.assembler.shutdown()  # completes every open trace; the runs go to the writer
        self.writer.shutdown()  # applies the last run writes, checkpoints
        if self.reconciler is not None:
            self.reconciler.close()
        if self.peers is not None:
            self.peers.close()
        if self.lake is not None:
            try:
                self.lake.close(final=True)  # every write is done: the rest goes to the lake now
            except Exception:
                log.exception(
                    "the last lake flush failed; the rows stay in %s and go at the next start", self.db_path
                )
        if self.forwarder is not None:
            self.forwarder.shutdown(min(grace, 5.0))  # the held spans of the last traces go out here
        if self.sinks is not None:
            self.sinks.shutdown(min(grace, 5.0))  # the last evaluations and spans go to the tools here
        self.http.shutdown()
        self.ui.close()
        self.grpc.shutdown(0)
        if self.housekeeping is not None:
            self.housekeeping.stop()
        try:
            self.database.close()
        finally:
            discovery.remove_sidecar(self.db_path, self._token)
            discovery.unregister(self._token)
        with self._lock:
            self._state = "stopped"
        log.info("collector stopped in %.1fs; database %s closed", time.monotonic() - started, self.db_path)

    # ---- score sinks (``collector.sink``): the hub is fed by the after-commit hooks (``after_commit``) --------

    def _start_sinks(self, cfg: CollectorConfig) -> None:
        """The quality counters and the ``[[sinks]]`` (their span forwarders take what ``_committed`` hands them)."""
        self.sinks = SinkHub(
            cfg.sinks,
            max_agents=cfg.metrics.max_agents,
            lookup=stored_runs(self._cursor),
            redactor=self._redactor("forward"),
            redacted_at_store=cfg.redaction.applies("store"),
        )
        self.sinks.start()

    @staticmethod
    def _keeping_raw(decoder: Any, sinks: SinkHub) -> Any:
        """The decoder, its answers keeping the request's body where the sinks may send it on as it is."""

        def decode(signal: str, encoding: str, body: bytes) -> Any:
            return sinks.keep_raw(decoder(signal, encoding, body), signal, encoding, body)

        return decode

    @staticmethod
    def _rescored(write: Any, sinks: SinkHub) -> Any:
        """A re-score's write that also sends the new evaluations to the sinks once committed."""

        def write_and_send(op: Any) -> None:
            write(op)
            sinks.rescored(op)

        return write_and_send

    def _assembler_overloaded(self) -> str | None:
        """Why ingest must wait for the assembler, if it must: it has not taken that many committed records yet."""
        backlog = self.assembler.backlog
        bound = self.config.assembler.max_backlog_records
        if backlog < bound:
            return None
        return f"the assembler is behind ({backlog} committed records not taken yet, bound {bound})"

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def in_process(self) -> bool:
        """Assembly and scoring run on a thread here instead of in the assembler process: when configured, or
        when a test hooks a stage or the reconstruction in (callables stay in this process)."""
        return (
            not self.config.assembler.process or bool(self._stage_factories) or self._reconstruct is not None
        )

    @property
    def running(self) -> bool:
        return self._state == "running"

    @property
    def uptime(self) -> float:
        return time.monotonic() - self._started_at if self._started_at else 0.0

    @property
    def grpc_endpoint(self) -> str:
        return discovery.client_address(*self.grpc.address)

    @property
    def http_endpoint(self) -> str:
        scheme = "https" if self.config.tls.cert else "http"
        return f"{scheme}://{discovery.client_address(*self.http.address)}"

    # ---- queries, health, metrics ---------------------------------------------------------------------------

    def _cursor(self) -> Any:
        """A cursor for one use, as a context manager (``Database.cursor``)."""
        return self.database.cursor()

    def query(
        self, sql: str, *, limit: int | None = None, timeout: float | None = None, params: Sequence[Any] = ()
    ) -> dict[str, Any]:
        """Run one sealed read-only query (the ``POST /v1/query`` answer as a dict)."""
        return self.read(sql, params, limit=limit, timeout=timeout).to_dict()

    def read(
        self, sql: str, params: Sequence[Any] = (), *, limit: int | None = None, timeout: float | None = None
    ) -> QueryResult:
        """Run one sealed read-only query, within the ``[query]`` limits: what ``/v1/query`` and the UI read with."""
        cfg = self.config.query
        row_limit = min(limit, cfg.row_limit) if limit else cfg.row_limit
        time_limit = min(timeout, cfg.timeout) if timeout else cfg.timeout
        try:
            try:
                with self._cursor() as cursor:
                    result = run_query(cursor, sql, row_limit=row_limit, timeout=time_limit, params=params)
            except DatabaseClosed as exc:
                raise QueryUnavailable(f"the database cannot be read right now: {exc}") from None
        except QueryError as exc:
            self._count_query(exc.kind)
            raise
        self._count_query("ok")
        return result

    def rescore(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Re-score stored runs here, where the database is held (``POST /v1/rescore``; ``agentotel_eval.collector.pipeline.rescore``):
        with the collector's own expectations, or those of the config file the payload names. One at a time."""
        from agentotel_eval.collector.config import ConfigError, default_config, load_config
        from agentotel_eval.collector.pipeline.rescore import (
            RescoreBusy,
            RescoreError,
            Rescorer,
            committed_by,
            request_from_payload,
            sealed_read,
        )

        request, config_path = request_from_payload(payload)
        config, name = self.config, "the collector's configuration"
        if config_path is not None:
            try:
                config, name = load_config(config_path, default_config()).validate(), config_path
            except (ConfigError, OSError) as exc:
                raise RescoreError(f"invalid configuration {config_path}: {exc}") from None
        if not self._rescore_lock.acquire(blocking=False):
            raise RescoreBusy("another re-score is running on this database; try again when it has finished")
        try:
            write = committed_by(self.writer.submit_operation)
            if self.sinks is not None:
                write = self._rescored(write, self.sinks)
            rescorer = Rescorer(
                config.scoring_config(),
                sealed_read(self._cursor),
                TraceReader(self._cursor),
                write,
                conventions=config.conventions,
                text_failures=config.reconstruction.text_failures,
                config_name=name,
            )
            summary = rescorer.run(request)
        finally:
            self._rescore_lock.release()
        if summary.judge_queued and self.judge is not None:
            self.judge.wake()
        return summary.to_dict()

    def _http_rescore(self, payload: Any) -> tuple[int, dict[str, Any]]:
        from agentotel_eval.collector.pipeline.rescore import RescoreBusy, RescoreError

        try:
            return 200, self.rescore(payload)
        except (RescoreError, QueryError) as exc:
            return 400, {"error": str(exc)}
        except RescoreBusy as exc:
            return 409, {"error": str(exc)}

    def _count_query(self, outcome: str) -> None:
        with self._query_lock:
            self.query_counts[outcome] = self.query_counts.get(outcome, 0) + 1

    def helpers(self) -> list[Supervisor]:
        """The supervisors of this collector's helper processes."""
        out = list(self.decoders.supervisors) if self.decoders is not None else []
        if isinstance(self.assembler, ProcessAssembly):
            out.append(self.assembler.supervisor)
        return out

    def health(self) -> dict[str, Any]:
        lake = None
        if self.lake is not None and self.config.lake is not None:
            lake = lake_health(self.lake, self.reconciler, self.config.lake.max_lag)
        return health_report(
            self._state,
            token=self._token,
            db=str(self.db_path),
            grpc=self.grpc_endpoint,
            http=self.http_endpoint,
            uptime=self.uptime,
            queued_records=self.writer.queued_records,
            database_open=self.database is not None and self.database.is_open,
            open_traces=self.assembler.open_traces,
            assembler_pid=self.assembler.pid,
            decode_pids=self.decoders.pids if self.decoders is not None else [],
            lake=lake,
        )

    def metrics_text(self) -> str:
        return exposition(self._telemetry)

    # ---- background: retention and a periodic summary line (``housekeeping``) --------------------------------

    @property
    def retention_deleted(self) -> dict[str, int]:
        return self.housekeeping.retention_deleted if self.housekeeping is not None else {}

    @property
    def external_log_evaluations(self) -> int:
        return self.after_commit.external_log_evaluations

    def run_retention(self) -> DeleteOlderThan | None:
        """Queue one retention pass (also run at startup and periodically when ``retention`` is set)."""
        return self.housekeeping.run_retention() if self.housekeeping is not None else None
