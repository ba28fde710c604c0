"""``compare``'s SPEC compiled: comma-separated ``key=value`` terms (``agent``, ``service``, ``since`` /
``until`` as durations such as 7d or 1.5h, ``from`` / ``to`` as ISO times, a resource attribute of the run's
span such as ``service.version``, ``where=SQL``) as SQL conditions on ``agent_runs r`` (and the run's span
``s``) with their parameters. Pure: the conditions go to
``agentotel_eval.access.queries.read_scored_runs``."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agentotel_eval.access.filters import FilterError, range_seconds


class SpecError(ValueError):
    """A SPEC that cannot be read; the message names the term."""


@dataclass(slots=True)
class Selection:
    """A database SPEC: SQL conditions on ``agent_runs r`` (and the run span ``s``) and their parameters."""

    conditions: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)
    needs_span: bool = False


def _ago(value: str, term: str, now: datetime) -> str:
    """The moment a duration ago (the grammar of ``--since`` and the pages' time range)."""
    try:
        seconds = range_seconds(value.strip(), allow_all=False) or 0.0
    except FilterError as exc:
        raise SpecError(f"{term}: {exc}") from None
    return (now - timedelta(seconds=seconds)).isoformat()


def _moment(value: str, term: str) -> str:
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise SpecError(f"{term}: expected an ISO time such as 2026-12-01T09:00, got {value!r}") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).isoformat()


#: the SPEC's own keys; any other key names a resource attribute
KEYS = ("agent", "service", "since", "until", "from", "to", "where")


def _check_not_a_typo(key: str, term: str) -> None:
    """A key without a dot that is one slip from a SPEC key (``agnt=``) is taken for that slip, not for a
    resource attribute that matches nothing: the SPEC is refused with the key it was probably meant to be."""
    import difflib

    if "." in key or len(key) < 3:
        return
    close = difflib.get_close_matches(key.lower(), KEYS, n=1, cutoff=0.75)
    if close:
        raise SpecError(
            f"{term!r}: unknown key {key!r} (did you mean {close[0]}=?); the keys are "
            f"{', '.join(KEYS)}, and a resource attribute by its full name (service.version=1.2)"
        )


def parse_spec(spec: str, now: datetime | None = None) -> Selection:
    """A database SPEC's conditions (pure)."""
    now = now or datetime.now(UTC)
    selection = Selection()
    text = spec.strip()
    if not text:
        raise SpecError("empty SPEC: give terms such as agent=planner,service.version=1.2,since=7d")
    where = None
    if "where=" in text:
        text, _, where = text.partition("where=")
        text = text.rstrip(", ")
    terms = [t.strip() for t in text.split(",") if t.strip()]
    for term in terms:
        key, sep, value = term.partition("=")
        key = key.strip()
        if not sep:
            key, value = "agent", term  # a bare word is an agent's name
        if key == "agent":
            selection.conditions.append("coalesce(r.agent_name, '(unnamed)') = ?")
            selection.params.append(value)
        elif key == "service":
            selection.conditions.append("r.service_name = ?")
            selection.params.append(value)
        elif key == "since":
            selection.conditions.append("r.start_time >= CAST(? AS TIMESTAMPTZ)")
            selection.params.append(_ago(value, term, now))
        elif key == "until":
            selection.conditions.append("r.start_time < CAST(? AS TIMESTAMPTZ)")
            selection.params.append(_ago(value, term, now))
        elif key == "from":
            selection.conditions.append("r.start_time >= CAST(? AS TIMESTAMPTZ)")
            selection.params.append(_moment(value, term))
        elif key == "to":
            selection.conditions.append("r.start_time < CAST(? AS TIMESTAMPTZ)")
            selection.params.append(_moment(value, term))
        elif re.fullmatch(r"[A-Za-z_][\w.\-]*", key):
            _check_not_a_typo(key, term)
            selection.conditions.append("json_extract_string(s.resource_attributes, ?) = ?")
            selection.params += ['$."' + key + '"', value]
            selection.needs_span = True
        else:
            raise SpecError(
                f"{term!r}: expected key=value (agent, service, since, until, from, to, where, or a "
                "resource attribute such as service.version)"
            )
    if where is not None:
        if not where.strip():
            raise SpecError("where=: give a condition on agent_runs' columns")
        selection.conditions.append(f"({where})")
    return selection
