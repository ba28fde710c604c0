"""MLflow: one assessment (feedback) per evaluation on the run's trace, naming the run's span
(``/api/3.0/mlflow/traces/<id>/assessments``), the spans over MLflow's OTLP/HTTP endpoint (``/v1/traces``,
with the experiment's id in ``x-mlflow-experiment-id``). The experiment is looked up by name, and created when
missing, on first use: a server that is down at start delays it, never the collector.

MLflow has no upsert of assessments: the trace's assessments are read first, and ours (source id
``agentotel-eval/...``, same name and span) is updated in place, so a re-score does not add a second one. A
trace MLflow has not stored yet (404) waits. Its metadata is a map of strings: lists go as JSON text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.config_sinks import SPAN_QUEUE, SinkConfig
from agentotel_eval.collector.forward.forwarder import ExportRetryable, HttpSender
from agentotel_eval.collector.sink.http import JsonApi, NotFound
from agentotel_eval.collector.sink.records import SinkEvaluation
from agentotel_eval.collector.sink.worker import Sent, SinkRefused, SinkRetryable
from agentotel_eval.store.rows import OWN_SOURCE

TRACE_PREFIX = "tr-"  # MLflow's id of a trace it took over OTLP: the prefix and the trace id in hex
SOURCE_PREFIX = f"{OWN_SOURCE}/"
EXPERIMENT_HEADER = "x-mlflow-experiment-id"
DEFAULT_EXPERIMENT_ID = "0"
UPDATED = "feedback,rationale,metadata"
_SOURCE_TYPES = {"LLM": "LLM_JUDGE", "CODE": "CODE"}


def trace_id(evaluation: SinkEvaluation) -> str:
    return TRACE_PREFIX + evaluation.trace_id


def assessment(evaluation: SinkEvaluation) -> dict[str, Any]:
    """The ``Assessment`` message (proto JSON) of one evaluation: a feedback with the score, or the error."""
    if evaluation.status == "ok" and evaluation.score is not None:
        feedback: dict[str, Any] = {"value": evaluation.score}
    else:
        feedback = {
            "error": {"error_code": "EVALUATION_ERROR", "error_message": evaluation.reason or "failed"}
        }
    return {
        "assessment_name": evaluation.metric,
        "trace_id": trace_id(evaluation),
        "span_id": evaluation.span_id,
        "source": {
            "source_type": _SOURCE_TYPES.get(evaluation.annotator, "CODE"),
            "source_id": SOURCE_PREFIX + (evaluation.evaluator or evaluation.metric),
        },
        "feedback": feedback,
        "rationale": evaluation.reason,
        "metadata": {
            key: value if isinstance(value, str) else json.dumps(value)
            for key, value in evaluation.metadata().items()
            if value is not None
        },
    }


def ours(assessments: Any) -> dict[tuple[str, str], str]:
    """(name, span id) -> assessment id of this collector's assessments among a trace's."""
    out: dict[tuple[str, str], str] = {}
    for item in assessments if isinstance(assessments, list) else ():
        source = item.get("source") or {}
        if str(source.get("source_id", "")).startswith(SOURCE_PREFIX) and item.get("assessment_id"):
            out.setdefault((item.get("assessment_name", ""), item.get("span_id", "")), item["assessment_id"])
    return out


class MlflowClient:
    def __init__(self, config: SinkConfig) -> None:
        self._experiment = config.experiment
        self._api = JsonApi(config.base_url, headers={}, timeout=config.timeout)
        self._experiment_id: str | None = None
        self._lock = threading.Lock()

    def experiment_id(self) -> str:
        """The experiment's id, looked up (or created) once; raises ``SinkRetryable`` while MLflow is away."""
        with self._lock:
            if self._experiment_id is None:
                self._experiment_id = self._resolve() if self._experiment else DEFAULT_EXPERIMENT_ID
            return self._experiment_id

    def _resolve(self) -> str:
        try:
            found = self._api.call(
                "GET", "/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": self._experiment}
            )
            return str(found["experiment"]["experiment_id"])
        except NotFound:
            pass
        try:
            created = self._api.call(
                "POST", "/api/2.0/mlflow/experiments/create", json={"name": self._experiment}
            )
            return str(created["experiment_id"])
        except SinkRefused:  # created meanwhile by another writer
            found = self._api.call(
                "GET", "/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": self._experiment}
            )
            return str(found["experiment"]["experiment_id"])

    def send(self, batch: Sequence[SinkEvaluation]) -> Sent:
        self.experiment_id()
        by_trace: dict[str, list[SinkEvaluation]] = {}
        for evaluation in batch:
            by_trace.setdefault(trace_id(evaluation), []).append(evaluation)
        waiting: list[SinkEvaluation] = []
        refused, why = 0, ""
        for trace, items in by_trace.items():
            try:
                info = self._api.call("GET", f"/api/3.0/mlflow/traces/{trace}")
            except NotFound:
                waiting.extend(items)
                continue
            existing = ours(((info or {}).get("trace") or {}).get("trace_info", {}).get("assessments"))
            for evaluation in items:
                body = assessment(evaluation)
                known = existing.get((evaluation.metric, evaluation.span_id))
                try:
                    if known:
                        self._api.call(
                            "PATCH",
                            f"/api/3.0/mlflow/traces/{trace}/assessments/{known}",
                            json={"assessment": body, "update_mask": UPDATED},
                        )
                    else:
                        self._api.call(
                            "POST", f"/api/3.0/mlflow/traces/{trace}/assessments", json={"assessment": body}
                        )
                except NotFound:
                    waiting.append(evaluation)
                except SinkRetryable:
                    raise
                except SinkRefused as exc:
                    refused, why = refused + 1, str(exc)
        return Sent(waiting=waiting, refused=refused, why=why)

    def close(self) -> None:
        self._api.close()


class _ExperimentSender:
    """The OTLP sender for MLflow: the experiment's id goes in a header, known once MLflow has answered."""

    def __init__(self, config: ForwardConfig, client: MlflowClient) -> None:
        self._config = config
        self._client = client
        self._sender: HttpSender | None = None

    def send(self, signal: str, request: Any) -> None:
        if self._sender is None:
            try:
                experiment = self._client.experiment_id()
            except SinkRetryable as exc:
                raise ExportRetryable(str(exc), exc.retry_after_s) from None
            headers = {**self._config.headers, EXPERIMENT_HEADER: experiment}
            self._sender = HttpSender(
                ForwardConfig(url=self._config.url, headers=headers, timeout_s=self._config.timeout_s)
            )
        self._sender.send(signal, request)

    def close(self) -> None:
        if self._sender is not None:
            self._sender.close()


def span_export(config: SinkConfig, client: MlflowClient) -> tuple[ForwardConfig, Any]:
    forward = ForwardConfig(
        url=config.base_url,
        protocol="http/protobuf",
        timeout_s=config.timeout,
        max_retries=config.max_retries,
        initial_backoff_s=config.initial_backoff,
        max_backoff_s=config.max_backoff,
        max_queue_records=SPAN_QUEUE,
    )
    return forward, _ExperimentSender(forward, client)
