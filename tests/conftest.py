"""Shared test set-up. litellm must never fetch its model-cost map over the network (there is none)."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
