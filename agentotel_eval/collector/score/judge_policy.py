"""Whether a completed run goes to the LLM judge: sampling, ``only_when`` conditions, the daily budget.

Pure decisions over plain data. Sampling hashes the run's ids, so the same run gets the same decision when it
is re-scored (late spans, a restart) and a fleet of collectors agrees without coordination.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from agentotel_eval.collector.config_scoring import JudgeSettings
from agentotel_eval.metrics.base import MetricResult
from agentotel_eval.metrics.registry import TOOL_ERRORS_DETECTORS
from agentotel_eval.reconstruct.model import AgentRun

_DETECTORS = TOOL_ERRORS_DETECTORS.name


def sample_point(trace_id: str, span_id: str) -> float:
    """A stable number in [0, 1) for this run."""
    digest = hashlib.blake2b(f"{trace_id}/{span_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def judge_decision(
    run: AgentRun, results: Sequence[MetricResult], settings: JudgeSettings
) -> tuple[bool, str]:
    """(True, "") to judge this run, else (False, why) — the reason is stored with a ``skipped`` row."""
    if settings.sample_rate < 1.0 and sample_point(run.trace_id, run.span_id) >= settings.sample_rate:
        return False, f"not sampled (sample_rate={settings.sample_rate:g})"
    if "always" in settings.only_when:
        return True, ""
    reasons = {
        "deterministic_failed": any(
            r.success is False and r.metric != _DETECTORS for r in results if r.status == "ok"
        ),
        "tool_error": any(call.status == "error" for call in run.tool_calls),
        "detector_found": any(
            r.metric == _DETECTORS
            and r.status == "ok"
            and bool(r.evaluation_log.get("detected"))
            and not _uncertain(r)
            for r in results
        ),
        # the detectors found nothing they are sure of, and something they could not check or are not sure of
        "detector_uncertain": any(
            r.metric == _DETECTORS and r.status == "ok" and _uncertain(r) for r in results
        ),
    }
    if any(reasons[w] for w in settings.only_when):
        return True, ""
    return False, "only_when not met (" + ", ".join(settings.only_when) + ")"


def _uncertain(result: MetricResult) -> bool:
    log = result.evaluation_log
    if "uncertain" in log:
        return bool(log["uncertain"])
    return not log.get("detected") and bool(
        log.get("could_not_run")
    )  # a row written before findings had a confidence


def over_budget(spent_today_usd: float, settings: JudgeSettings) -> str | None:
    """The skip reason when today's judge spend has reached the cap, else None."""
    cap = settings.max_cost_usd_per_day
    if cap is None or spent_today_usd < cap:
        return None
    return f"daily judge budget reached: ${spent_today_usd:.4f} spent of ${cap:.4f}"
