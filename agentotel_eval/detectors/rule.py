"""What a rule declares: the error type and subtypes it finds, the data it needs, its severity and how sure
its findings are. The registry (``registry``) lists every rule; the detectors, ``could_not_run``, the judge's
prompt, ``calibrate``, the config's validation, the pages and docs/judge.md all read the
declarations from there."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentotel_eval.detectors.finding import Finding
from agentotel_eval.detectors.view import RunView


@dataclass(frozen=True, slots=True)
class Need:
    """Data a rule reads; ``missing`` says why a rule could not run when the run lacks it."""

    name: str
    missing: str
    present: Callable[[RunView], bool]


def _has_tools(view: RunView) -> bool:
    return view.tools is not None


def _has_schemas(view: RunView) -> bool:
    return bool(view.tools) and any(t.parameters for t in view.tools or ())


def _has_answer(view: RunView) -> bool:
    return bool((view.answer or "").strip())


def _has_results(view: RunView) -> bool:
    return any(c.output is not None or bool(c.error) for c in view.calls)


def _has_input(view: RunView) -> bool:
    return bool((view.user_input or "").strip())


def _has_several_calls(view: RunView) -> bool:
    return len(view.calls) > 1


NEEDS = {
    need.name: need
    for need in (
        Need("tools", "the tools offered to the model are not recorded", _has_tools),
        Need("schemas", "no tool schema is recorded", _has_schemas),
        Need("answer", "the run's final answer is not recorded", _has_answer),
        Need("results", "no call's result or error is recorded", _has_results),
        Need("input", "the run's input is not recorded", _has_input),
        Need("calls", "", _has_several_calls),  # a rule over several calls: silent on a one-call run
    )
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: ``name`` (``type.subtype`` of its main subtype), what it finds and needs, and ``find``.

    - ``needs``: data from ``NEEDS`` it cannot run without (``could_not_run`` reports the missing ones);
    - ``severity``: of its findings ("low" for an observation, which never changes a verdict);
    - ``confidence``: of its findings when it is sure; findings it is not sure of carry less (``Finding``);
    - ``unchecked``: what it could not check on a run it ran on (calls without arguments, a truncated schema).
    """

    name: str
    type: str
    subtypes: tuple[str, ...]
    summary: str
    find: Callable[[RunView], Sequence[Finding]]
    needs: tuple[str, ...] = ()
    severity: str = "medium"
    confidence: float = 1.0
    observation: bool = False
    unchecked: Callable[[RunView], Sequence[str]] | None = None
    label: str = field(default="")

    def __post_init__(self) -> None:
        unknown = [n for n in self.needs if n not in NEEDS]
        if unknown:
            raise ValueError(f"rule {self.name}: unknown needs {unknown}")
        if not self.label:
            object.__setattr__(self, "label", self.type)

    def missing(self, view: RunView) -> list[str]:
        """Why it could not run on ``view`` (empty: it ran)."""
        return [NEEDS[n].missing for n in self.needs if not NEEDS[n].present(view)]
