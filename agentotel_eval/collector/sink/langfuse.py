"""Langfuse: one score per evaluation on the run's observation (``POST /api/public/scores``, the batch form
its Python SDK sends), the spans over its OTLP/HTTP endpoint (``/api/public/otel/v1/traces``), both with the
project's keys as HTTP basic authentication.

A score's id is derived from (trace, run span, metric) and its timestamp is the run's start: Langfuse updates
a score sent again with the same id and timestamp, so a re-score updates it. An evaluation that failed has no
number: it goes as a categorical score ``error`` of the same name, with the reason as its comment, so the run
shows that it was evaluated and why there is no score (a later re-score that succeeds replaces it). Langfuse
answers 202 when it took every score and 207 with the rejected count and reasons otherwise.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.config_sinks import SPAN_QUEUE, SinkConfig
from agentotel_eval.collector.sink.http import JsonApi
from agentotel_eval.collector.sink.records import SinkEvaluation
from agentotel_eval.collector.sink.worker import Sent
from agentotel_eval.store.rows import OWN_SOURCE

PATH = "/api/public/scores"
OTLP_PATH = "/api/public/otel"
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, OWN_SOURCE)


def score_id(evaluation: SinkEvaluation) -> str:
    """The same id for every evaluation of one run and metric."""
    return str(uuid.uuid5(_NAMESPACE, "/".join(evaluation.key)))


def timestamp(evaluation: SinkEvaluation) -> str:
    """The run's start (stable across re-scores), else when it was scored; ISO 8601 in UTC."""
    ns = evaluation.run.start_ns or evaluation.created_at_ns
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat().replace("+00:00", "Z")


#: the value and data type of a failed evaluation's score (Langfuse takes a categorical
#: score's value as a string)
FAILED = ("error", "CATEGORICAL")


def score(evaluation: SinkEvaluation) -> dict[str, Any]:
    """Langfuse's ``CreateScoreRequest`` for one evaluation (camelCase, as on the wire)."""
    value, data_type = (float(evaluation.score), "NUMERIC") if evaluation.score is not None else FAILED
    return {
        "id": score_id(evaluation),
        "traceId": evaluation.trace_id,
        "observationId": evaluation.span_id,
        "name": evaluation.metric,
        "value": value,
        "dataType": data_type,
        "comment": evaluation.reason or None,
        "metadata": evaluation.metadata(),
        "timestamp": timestamp(evaluation),
    }


def _headers(config: SinkConfig) -> dict[str, str]:
    pair = f"{config.secret('public_key_env')}:{config.secret('secret_key_env')}".encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


class LangfuseClient:
    def __init__(self, config: SinkConfig) -> None:
        self._api = JsonApi(config.base_url, headers=_headers(config), timeout=config.timeout)

    def send(self, batch: Sequence[SinkEvaluation]) -> Sent:
        scores = [score(e) for e in batch]
        answer = self._api.call("POST", PATH, json=scores)
        rejected = answer.get("rejected", 0) if isinstance(answer, dict) else 0
        if rejected:
            errors = answer.get("errors") or []
            why = "; ".join(str(e.get("message", e)) for e in errors[:3] if isinstance(e, dict))
            return Sent(refused=int(rejected), why=why or "rejected by Langfuse")
        return Sent()

    def close(self) -> None:
        self._api.close()


def span_export(config: SinkConfig) -> tuple[ForwardConfig, Any]:
    return ForwardConfig(
        url=config.base_url + OTLP_PATH,
        protocol="http/protobuf",
        headers=_headers(config),
        timeout_s=config.timeout,
        max_retries=config.max_retries,
        initial_backoff_s=config.initial_backoff,
        max_backoff_s=config.max_backoff,
        max_queue_records=SPAN_QUEUE,
    ), None
