"""The collector service: wires receivers -> ingest -> writer -> assembler -> [stages] -> run writer.

The parts it wires each live in a module of their own: the stages in their packages, what happens after a
commit in ``after_commit``, ``/healthz`` in ``health``, ``/metrics`` in ``prometheus_registry``, retention and
the summary line in ``housekeeping``, the exposure warnings and TLS files in ``exposure``, where decoding and
assembly run in ``decode.choice`` and ``pipeline.choice``, the lake's waits and joining it in ``lake.timing``,
queries in ``store.queries``, re-scores in ``pipeline.rescore`` and their HTTP answers in
``receive.http.api``. What is left here is construction from the config, the callbacks between the parts, and
the order they start and stop in.

``Collector(config).start()`` opens the database, starts every stage and binds the ports; ``shutdown()`` stops
accepting, lets requests in flight commit, completes every open trace, writes the last runs and closes the
database cleanly. Both are idempotent. Usable in-process (tests, embedding) or through
``agentotel-eval serve``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from agentotel_eval.access import discovery
from agentotel_eval.collector.after_commit import AfterCommit, RunsCommitted
from agentotel_eval.collector.assemble.assembler import Reconstruct
from agentotel_eval.collector.config import CollectorConfig
from agentotel_eval.collector.decode.choice import decoder_for
from agentotel_eval.collector.decode.pool import DecodePool
from agentotel_eval.collector.exposure import tls_files, warn_if_exposed
from agentotel_eval.collector.forward.forwarder import Forwarder
from agentotel_eval.collector.health import health_report
from agentotel_eval.collector.housekeeping import Housekeeping
from agentotel_eval.collector.lake.flusher import LakeFlusher
from agentotel_eval.collector.lake.peer_spans import PeerReader, PeerSpans
from agentotel_eval.collector.lake.reconciler import Reconciler
from agentotel_eval.collector.lake.timing import join_lake
from agentotel_eval.collector.pipeline.assembly import AssemblyStage, StageFactory, behind
from agentotel_eval.collector.pipeline.choice import assembly_for, runs_in_process
from agentotel_eval.collector.pipeline.helper_proxy import ProcessAssembly
from agentotel_eval.collector.pipeline.rescore import HeldRescores
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
from agentotel_eval.collector.store.database import Database
from agentotel_eval.collector.store.operations import DeleteOlderThan
from agentotel_eval.collector.store.queries import Queries
from agentotel_eval.collector.store.reader import TraceReader
from agentotel_eval.collector.store.runs import RunWriter
from agentotel_eval.collector.store.writer import StoreWriter, WriterSettings
from agentotel_eval.collector.ui.routes import UiPages
from agentotel_eval.collector.ui.web import WebUi
from agentotel_eval.otlp.records import SpanRecord
from agentotel_eval.store.query import QueryResult

log = logging.getLogger("agentotel.collector")

#: what forwards completed spans downstream (``[forward]``)
Forward = Callable[[Sequence[SpanRecord]], None]


class Collector:
    """One collector instance. ``stages`` wrap the run writer, outermost first: each gets the next stage. It
    never changes process-wide settings of the process it runs in."""

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
        #: how the helper processes tune themselves; this process is its owner's (``agentotel-eval serve``
        #: tunes its own with the same settings, see ``agentotel_eval.collector.process.tuning``)
        self.tuning = tuning
        self.db_path = Path(config.db).expanduser().resolve()
        self._stage_factories = tuple(stages)
        self._reconstruct = reconstruct
        self._summary_interval = summary_interval
        self._started_at = 0.0
        self._token = discovery.new_token()
        self._lock = threading.Lock()
        self._state = "new"
        self.housekeeping: Housekeeping | None = None
        self.database: Any = None  # Database once started
        #: the read side: ``/v1/query`` and the web UI read through it
        self.queries = Queries(self._cursor, self.config.query)
        #: outcomes of the queries so far, by kind ("ok" or a ``QueryError`` kind)
        self.query_counts = self.queries.counts
        self.lake: LakeFlusher | None = None  # with [lake]: copies what this node commits to the shared lake
        self.reconciler: Reconciler | None = None  # with [lake]: rebuilds traces several nodes stored
        #: with [lake]: other nodes' parts of a split trace, read to assemble it
        self.peers: PeerSpans | None = None
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
        self.rescores: HeldRescores
        self._telemetry: CollectorRegistry
        #: the bearer token check (``[auth] token``); None: no authentication
        self.auth = Authenticator(config.auth.token) if config.auth.token else None

    # ---- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> Collector:
        """Open the store, build and start every stage in the order data flows, then listen and announce."""
        with self._lock:
            if self._state != "new":
                return self
            self._state = "starting"
        self._open()
        try:
            forward = self._start_outputs()
            self._build_pipeline(forward)
            self.writer.start()
            self.assembler.start()
            self._assembler_started = True
            if self.judge is not None:
                self.judge.start()
            self._build_listeners()
            if self.lake is not None:  # before listening
                self.reconciler, self.peers = join_lake(self.config, self.lake, self._trace_reader)
            self._telemetry = self._registry()
            self.http.start()
            self.grpc.start()
        except BaseException:
            self._close_partial()
            raise
        self._started_at = time.monotonic()
        self._announce()
        self.housekeeping = Housekeeping(
            self.writer,
            self.assembler,
            retention_seconds=self.config.retention_seconds,
            summary_interval=self._summary_interval,
        )
        self.housekeeping.start()
        with self._lock:
            self._state = "running"
        return self

    def _open(self) -> None:
        """The ports checked first, the lake connected, then the database: a start that cannot listen or use
        its lake creates neither the database nor its lock."""
        cfg = self.config
        try:
            check_free(*cfg.grpc_address, "OTLP/gRPC", "grpc")
            check_free(*cfg.http_address, "OTLP/HTTP", "http")
            if cfg.lake is not None:
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

    def _start_outputs(self) -> Forward | None:
        """What leaves the collector: ``[forward]`` and the score sinks (started: they only queue until fed).
        Returns what forwards completed spans, if anything does."""
        cfg = self.config
        if cfg.forward is not None:
            self.forwarder = Forwarder(cfg.forward, redactor=cfg.redaction.redactor("forward"))
            self.forwarder.start()
        self.sinks = SinkHub(
            cfg.sinks,
            max_agents=cfg.metrics.max_agents,
            lookup=stored_runs(self._cursor),
            redactor=cfg.redaction.redactor("forward"),
            redacted_at_store=cfg.redaction.applies("store"),
        )
        self.sinks.start()
        return self.forwarder.submit_spans if self.forwarder is not None else None

    def _build_pipeline(self, forward: Forward | None) -> None:
        """Writer, after-commit hooks, judge, run writer, assembly and ingest, connected by callbacks."""
        cfg, sinks, forwarder = self.config, self.sinks, self.forwarder
        assert sinks is not None
        self.after_commit = AfterCommit(
            consume=lambda spans, logs, at: self.assembler.consume(spans, logs, at),
            submit_operation=lambda op: self.writer.submit_operation(op),
            forwarder=forwarder,
            sinks=sinks,
        )
        self.writer = StoreWriter(
            self.database.connection,
            WriterSettings.from_config(cfg.writer, cfg.receiver),
            on_commit=self.after_commit,
            incoming=lambda: self.ingestor.decoding,
            reopen=self.database.reopen,
        )
        if cfg.judge is not None:
            self.judge = JudgeWorker(
                cfg.judge,
                self.writer,
                self._cursor,
                forward_spans=forward,
                forward_logs=forwarder.submit_logs if forwarder is not None else None,
                redactor=cfg.redaction.redactor("judge"),
                on_written=sinks.evaluation_written,
            )
        self.run_writer = RunWriter(self.writer, on_committed=RunsCommitted(judge=self.judge, sinks=sinks))
        # On a lake, a trace split between nodes is read whole (other nodes' parts added); not when
        # forwarding: this node would forward the other nodes' spans too.
        self._trace_reader = (
            PeerReader(self._cursor)
            if cfg.lake is not None and cfg.lake.read_peer_spans and forward is None
            else TraceReader(self._cursor)
        )
        self.assembler = assembly_for(
            cfg,
            self._trace_reader,
            self.run_writer,
            forward=forward,
            tuning=self.tuning,
            stages=self._stage_factories,
            reconstruct=self._reconstruct,
        )
        # the records of the spans: for [forward]; for the sinks only where a request's
        # body cannot go on as is
        keep_spans = forward is not None or (sinks.forwards_spans and sinks.keep_records)
        self.decoders, decoder = decoder_for(
            cfg, keep_spans=keep_spans, tuning=self.tuning, log_level=log.getEffectiveLevel()
        )
        if self.decoders is not None:
            self.decoders.start()
        self.ingestor = Ingestor(
            self.writer,
            decoder=sinks.keeping_raw(decoder) if sinks.forwards_spans else decoder,
            export_timeout=cfg.receiver.export_timeout,
            backlog=lambda: self.writer.pending_operation_rows,
            overloaded=partial(behind, self.assembler, cfg.assembler.max_backlog_records),
            cpu_slots=cfg.receiver.decode_slots,
        )
        self.rescores = HeldRescores(
            cfg,
            self._cursor,
            self.writer.submit_operation,
            sent=sinks.rescored,
            wake_judge=self.judge.wake if self.judge is not None else None,
        )

    def _build_listeners(self) -> None:
        """OTLP/HTTP with the JSON API and the web UI on it, and OTLP/gRPC; bound, not yet serving."""
        cfg = self.config
        cert, key = tls_files(cfg.tls)
        self.ui = UiPages(self.queries.read)
        self.http = HttpReceiver(
            *cfg.http_address,
            HttpApp(
                ingestor=self.ingestor,
                max_request_size=cfg.receiver.max_request_size,
                query=self.queries.query,
                rescore=self.rescores.run,
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
        self.grpc = GrpcReceiver(
            *cfg.grpc_address,
            self.ingestor,
            workers=cfg.receiver.grpc_workers,
            max_request_size=cfg.receiver.max_request_size,
            auth=self.auth,
            tls=(Path(cert).read_bytes(), Path(key).read_bytes()) if cert else None,
            idle_timeout=cfg.receiver.http_idle_timeout,
            handshake_timeout=cfg.receiver.http_read_timeout,
        )

    def _registry(self) -> CollectorRegistry:
        """``/metrics``: every part's counters, read when scraped."""
        return prometheus_registry(
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

    def _announce(self) -> None:
        """Warn when the listeners are open to other machines; register where this collector is, for commands
        run elsewhere (the database's sidecar file and the user's registry)."""
        cfg = self.config
        cert, _key = tls_files(cfg.tls)
        warn_if_exposed(
            (cfg.http_address[0], self.http.address[1]),
            (cfg.grpc_address[0], self.grpc.address[1]),
            authenticated=self.auth is not None,
            tls=bool(cert),
            db=self.db_path,
        )
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
        discovery.register(info)

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
        self._close_lake(final=False)
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
        self._close_lake(final=True)  # every write is done: the rest goes to the lake now
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

    def _close_lake(self, *, final: bool) -> None:
        """The reconciler and the peer reads, then the copy to the lake: ``final`` flushes what is left first
        (a failure there is logged: the rows stay in the database and go at the next start)."""
        if self.reconciler is not None:
            self.reconciler.close()
        if self.peers is not None:
            self.peers.close()
        if self.lake is None:
            return
        try:
            self.lake.close(final=final)
        except Exception:
            if not final:
                raise
            log.exception(
                "the last lake flush failed; the rows stay in %s and go at the next start", self.db_path
            )

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def in_process(self) -> bool:
        """Assembly and scoring run on a thread here instead of in the assembler process: when configured, or
        when a test hooks a stage or the reconstruction in (callables stay in this process)."""
        return runs_in_process(self.config, self._stage_factories, self._reconstruct)

    @property
    def running(self) -> bool:
        return self._state == "running"

    @property
    def uptime(self) -> float:
        return time.monotonic() - self._started_at if self._started_at else 0.0

    @property
    def tls_files(self) -> tuple[str, str]:
        """The TLS certificate and key, as absolute paths; empty without TLS."""
        return tls_files(self.config.tls)

    @property
    def grpc_endpoint(self) -> str:
        return discovery.client_address(*self.grpc.address)

    @property
    def http_endpoint(self) -> str:
        scheme = "https" if self.config.tls.cert else "http"
        return f"{scheme}://{discovery.client_address(*self.http.address)}"

    # ---- queries, health, metrics --------------------------------------------------------------------------

    def _cursor(self) -> Any:
        """A cursor for one use, as a context manager (``Database.cursor``)."""
        return self.database.cursor()

    def query(
        self, sql: str, *, limit: int | None = None, timeout: float | None = None, params: Sequence[Any] = ()
    ) -> dict[str, Any]:
        """Run one sealed read-only query (the ``POST /v1/query`` answer as a dict)."""
        return self.queries.query(sql, limit=limit, timeout=timeout, params=params)

    def read(
        self, sql: str, params: Sequence[Any] = (), *, limit: int | None = None, timeout: float | None = None
    ) -> QueryResult:
        """Run one sealed read-only query, within the ``[query]`` limits: what ``/v1/query``
        and the UI read with."""
        return self.queries.read(sql, params, limit=limit, timeout=timeout)

    def rescore(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Re-score stored runs here, where the database is held (``POST /v1/rescore``): with the collector's
        own expectations, or those of the config file the payload names. One at a time."""
        return self.rescores.run(payload)

    def helpers(self) -> list[Supervisor]:
        """The supervisors of this collector's helper processes."""
        out = list(self.decoders.supervisors) if self.decoders is not None else []
        if isinstance(self.assembler, ProcessAssembly):
            out.append(self.assembler.supervisor)
        return out

    def health(self) -> dict[str, Any]:
        return health_report(
            self._state,
            token=self._token,
            db=str(self.db_path),
            grpc=self.grpc_endpoint,
            http=self.http_endpoint,
            uptime=self.uptime,
            writer=self.writer,
            database=self.database,
            assembler=self.assembler,
            decoders=self.decoders,
            lake=self.lake,
            reconciler=self.reconciler,
            lake_max_lag=self.config.lake.max_lag if self.config.lake is not None else 0.0,
        )

    def metrics_text(self) -> str:
        return exposition(self._telemetry)

    # ---- background: retention and a periodic summary line (``housekeeping``) ------------------------------

    @property
    def retention_deleted(self) -> dict[str, int]:
        return self.housekeeping.retention_deleted if self.housekeeping is not None else {}

    @property
    def external_log_evaluations(self) -> int:
        return self.after_commit.external_log_evaluations

    def run_retention(self) -> DeleteOlderThan | None:
        """Queue one retention pass (also run at startup and periodically when ``retention`` is set)."""
        return self.housekeeping.run_retention() if self.housekeeping is not None else None
