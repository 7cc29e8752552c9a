"""The Trainer's run_fn, input functions and schedules."""
