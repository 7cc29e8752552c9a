"""The run's cost, projected before Transform (component.py) from measured speeds
(estimate.py, measured_speeds.json) on this machine (machine.py)."""

from components.cost_estimate.component import CostEstimate
from components.cost_estimate.estimate import ESTIMATE_PROPERTY

__all__ = ["CostEstimate", "ESTIMATE_PROPERTY"]
