"""Training machinery every model family shares: the run wrapper (strategy, precision, chief),
input functions, schedules, the optimizer, losses, history and the Tuner's search."""
