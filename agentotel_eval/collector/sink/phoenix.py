"""Arize Phoenix: one span annotation per evaluation on the run's span (``POST /v1/span_annotations``), the
spans over Phoenix's OTLP/HTTP endpoint (``/v1/traces``).

Phoenix keeps one annotation per (name, span, identifier) and updates it when the same three come again: ours
all carry the identifier ``agentotel-eval``, so a re-score updates the annotation, and a person's annotation
of the same name (identifier empty) stays beside it. The request is synchronous, so Phoenix says which spans
it does not have yet (404): the others are written at once, those wait for their span.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentotel_eval.collector.config_forward import ForwardConfig
from agentotel_eval.collector.config_sinks import SPAN_QUEUE, SinkConfig
from agentotel_eval.collector.sink.http import JsonApi, NotFound
from agentotel_eval.collector.sink.records import SinkEvaluation
from agentotel_eval.collector.sink.worker import Sent
from agentotel_eval.store.rows import OWN_SOURCE

IDENTIFIER = OWN_SOURCE
PATH = "/v1/span_annotations"
_MISSING = re.compile(r"Spans with IDs (.+?) do not exist")


def annotation(evaluation: SinkEvaluation) -> dict[str, Any]:
    """Phoenix's ``SpanAnnotationData`` for one evaluation."""
    return {
        "span_id": evaluation.span_id,
        "name": evaluation.metric,
        "annotator_kind": evaluation.annotator,
        "result": {"label": evaluation.label, "score": evaluation.score, "explanation": evaluation.reason},
        "metadata": evaluation.metadata(),
        "identifier": IDENTIFIER,
    }


def missing_spans(message: str) -> set[str] | None:
    """The span ids a 404 names (Phoenix: "Spans with IDs a, b do not exist."), or None when it names none."""
    found = _MISSING.search(message)
    if found is None:
        return None
    return {part.strip() for part in found.group(1).split(",") if part.strip()}


def _headers(config: SinkConfig) -> dict[str, str]:
    key = config.secret("api_key_env")
    return {"Authorization": f"Bearer {key}"} if key else {}


class PhoenixClient:
    def __init__(self, config: SinkConfig) -> None:
        self._api = JsonApi(config.base_url, headers=_headers(config), timeout=config.timeout)

    def send(self, batch: Sequence[SinkEvaluation]) -> Sent:
        try:
            self._post(batch)
        except NotFound as exc:
            missing = missing_spans(str(exc))
            if missing is None:
                return Sent(waiting=batch)
            present = [e for e in batch if e.span_id not in missing]
            if present:
                self._post(present)
            return Sent(waiting=[e for e in batch if e.span_id in missing])
        return Sent()

    def _post(self, batch: Sequence[SinkEvaluation]) -> None:
        self._api.call("POST", PATH, params={"sync": "true"}, json={"data": [annotation(e) for e in batch]})

    def close(self) -> None:
        self._api.close()


def span_export(config: SinkConfig) -> tuple[ForwardConfig, Any]:
    """Where the spans go (Phoenix's OTLP/HTTP receiver on the same port), and no sender of our own."""
    return ForwardConfig(
        url=config.base_url,
        protocol="http/protobuf",
        headers=_headers(config),
        timeout_s=config.timeout,
        max_retries=config.max_retries,
        initial_backoff_s=config.initial_backoff,
        max_backoff_s=config.max_backoff,
        max_queue_records=SPAN_QUEUE,
    ), None
