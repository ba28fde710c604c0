"""A finding: one tool-use error a rule found, with the evidence it compared and how sure the rule is."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentotel_eval.frozen import freeze, thaw

#: a finding below this confidence is one the rule cannot be sure of (``uncertain``): it is shown, it sends
#: the run to the judge under ``only_when = ["detector_uncertain"]``, and it does not fail a run on its own at
#: the metric's default threshold
UNCERTAIN_BELOW = 0.7


@dataclass(frozen=True, slots=True)
class Finding:
    """One deterministic finding: its type (one of the six tool-use error types), a subtype saying which kind
    of that error, the rule that found it, the calls it concerns, the values it compared (``evidence``) and
    how sure the rule is (``confidence``; below ``UNCERTAIN_BELOW`` the finding is ``uncertain``)."""

    type: str
    description: str
    tool_name: str
    call_indices: tuple[int, ...]
    argument: str | None = None  # the offending argument's path ("passengers/0/age") for parameter errors
    subtype: str = ""
    rule: str = ""
    evidence: Mapping[str, Any] | None = None
    severity: str | None = None  # "low" for an observation: it never changes a verdict
    confidence: float = 1.0

    @property
    def uncertain(self) -> bool:
        return self.confidence < UNCERTAIN_BELOW

    def to_dict(self) -> dict[str, Any]:
        out = {
            "type": self.type,
            "subtype": self.subtype,
            "rule": self.rule,
            "description": self.description,
            "tool_name": self.tool_name,
            "call_indices": list(self.call_indices),
            "argument": self.argument,
            "evidence": thaw(self.evidence) if self.evidence is not None else None,
            "confidence": self.confidence,
            "uncertain": self.uncertain,
        }
        if self.severity is not None:
            out["severity"] = self.severity
        return out


def finding(
    type_: str,
    subtype: str,
    rule: str,
    tool: str,
    calls: tuple[int, ...],
    description: str,
    evidence: Mapping[str, Any] | None = None,
    *,
    argument: str | None = None,
    confidence: float = 1.0,
) -> Finding:
    """A Finding with its evidence frozen (evidence is compared and hashed with the finding)."""
    return Finding(
        type_,
        description,
        tool,
        calls,
        argument=argument,
        subtype=subtype,
        rule=rule,
        evidence=freeze(dict(evidence)) if evidence is not None else None,
        confidence=confidence,
    )
