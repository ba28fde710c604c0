"""Trajectory specs: what a run's tool calls should look like, and the exact alignment that scores a run.

- ``spec``: the model and its reading (``parse_spec``), ``presets``: peers' modes in one line;
- ``matchers``: argument matchers (``$regex``, ``$approx``, ``$ref``, ...);
- ``checks``: a run's calls against the steps' matchers, once; ``align``: the optimum alignment
  of calls to a spec;
- ``report``: the details, as what a run's shape determines and the run's own checks; ``score``: the entry
  point, which keeps reports by shape of run.
"""

from agentotel_eval.trajectory.matchers import SpecError
from agentotel_eval.trajectory.score import TrajectoryOutcome, score_trajectory
from agentotel_eval.trajectory.spec import Step, TrajectorySpec, parse_spec

__all__ = ["SpecError", "Step", "TrajectoryOutcome", "TrajectorySpec", "parse_spec", "score_trajectory"]
