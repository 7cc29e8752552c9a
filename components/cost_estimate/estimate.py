"""A run's cost, projected before Transform from the default recipes' measured speeds.

`measured_speeds.json` (written by `python -m benchmarks.speeds` from the results files of each
task's default recipe, never by hand) holds, per task, family and preset, each measured
machine kind's Trainer seconds per step and the pipeline's other seconds, on the full data and
on the embedded corpus. The Trainer's part is the run's steps times the seconds per step (at
the run's batch size); the rest (reading, statistics, Transform, evaluation, the orchestrator)
is the embedded corpus's fixed cost plus the full data's remainder scaled by the training
examples. On a machine of
a measured kind (the same CPU family, model and cores) the projection is that kind's. On
another, the Trainer's part comes from a few steps of the run's own model timed on this machine
(trainer_module/training/step_timing.py: a full batch at the longest inputs, without the
Trainer's evaluation passes, wide path and export) and the rest from the slowest measured
kind; without a timing, all of it is the slowest measured kind's, with the range of all of
them. Matmul peaks predict the measured speeds poorly (an AMX Xeon's peak is three times a Zen
4's, its BERT training 1.2 times as fast), so nothing is scaled by them.
"""

import dataclasses
import json
import math
import os
from typing import Callable, Optional, Sequence, Tuple

from components.cost_estimate import machine

ESTIMATE_PROPERTY = "estimate"  # on CostEstimate's output: JSON of an Estimate
SPEEDS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "measured_speeds.json")


def measured_speeds(task: str, family: str, preset: str, path: str = SPEEDS_FILE) -> list:
    """The measured rows of `task`'s `family` at `preset` ([] when none was measured)."""
    with open(path, encoding="utf-8") as f:
        rows = json.load(f)["speeds"]
    return [r for r in rows if (r["task"], r["family"], r["preset"]) == (task, family, preset)]


@dataclasses.dataclass(frozen=True)
class Estimate:
    train_examples: int
    train_steps: int
    batch_size: int
    epochs: float
    projected_minutes: Optional[float]  # None: no measured speed applies
    training_minutes: Optional[float]
    basis: str  # where the speed comes from, or why there is no projection
    warnings: Tuple[str, ...] = ()  # why the projection may be far off

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def project(
    rows: Sequence[dict],
    *,
    train_examples: int,
    train_steps: int,
    batch_size: int,
    here: Optional[dict] = None,
    gpus: int = 0,
    time_budget_minutes: Optional[float] = None,
    changed: Sequence[str] = (),
    timed_step: Optional[Callable[[], Optional[float]]] = None,
) -> Estimate:
    """The projection for `train_steps` steps of `batch_size` over `train_examples` on
    machine `here` (default: this one), from the measured `rows`; `changed`: the settings
    (`field=value`) in which the run's model differs from the measured preset's;
    `timed_step()`: the seconds of one of the run's training steps timed here (None: it could
    not be timed), called only where no row is of this machine's kind."""
    here = here or machine.this_machine()
    epochs = train_steps * batch_size / max(1, train_examples)
    warnings = list(projection_warnings(rows, here, changed)) if rows and not gpus else []

    def estimate(minutes: Optional[float], training: Optional[float], basis: str) -> Estimate:
        return Estimate(
            train_examples,
            train_steps,
            batch_size,
            round(epochs, 3),
            minutes,
            training,
            basis,
            tuple(warnings),
        )

    if gpus:
        return estimate(None, None, "training on a GPU: the measured speeds are CPUs'")
    if not rows:
        return estimate(None, None, "no measured speed of this family and preset")

    def minutes(row) -> Tuple[float, float]:
        per_step = row["trainer_seconds"] / row["train_steps"] * batch_size / row["batch_size"]
        training = train_steps * per_step
        if time_budget_minutes:
            training = min(training, time_budget_minutes * 60)
        # The fixed part (measured on the embedded corpus), and the rest by the examples.
        fixed = min(row.get("fixed_seconds", 0.0), row["other_seconds"])
        other = fixed + (row["other_seconds"] - fixed) * train_examples / row["train_examples"]
        return round((training + other) / 60, 2), round(training / 60, 2)

    same = next((r for r in rows if machine.same_kind(r["machine"], here)), None)
    if same is not None:
        return estimate(*minutes(same), f"as measured on this machine kind ({same['result']})")
    projected = {r["result"]: minutes(r) for r in rows}
    slowest = max(rows, key=lambda r: projected[r["result"]][0])
    seconds = timed_step() if timed_step is not None else None
    if seconds is not None:
        training = train_steps * seconds
        if time_budget_minutes:
            training = min(training, time_budget_minutes * 60)
        total, trained = projected[slowest["result"]]
        # The timed steps are the run's own model on this CPU: neither warning applies.
        warnings.clear()
        return estimate(
            round(total - trained + training / 60, 2),
            round(training / 60, 2),
            f"this CPU kind was not measured: training from steps of this run's model timed "
            f"here ({seconds:.3g} s a step, before the Trainer's evaluation and export), the "
            f"rest the slowest measured kind's ({machine.describe(slowest['machine'])})",
        )
    low = min(total for total, _ in projected.values())
    kinds = "; ".join(machine.describe(r["machine"]) for r in rows)
    return estimate(
        *projected[slowest["result"]],
        f"this CPU kind was not measured: the slowest measured kind's; the {len(rows)} measured "
        f"({kinds}) give {_minutes(low)} to {_minutes(projected[slowest['result']][0])}",
    )


def projection_warnings(rows: Sequence[dict], here: dict, changed: Sequence[str]):
    """Why the measured speeds may not hold for this run: settings that change a step's cost
    from the measured preset's (a longer max_length, a wider d_model, another image_size), and
    a CPU without the bfloat16 instructions every measured kind had (mixed precision then
    runs in float32, or bfloat16 is emulated: several times slower)."""
    if changed:
        yield (
            f"the run changes the measured preset ({', '.join(changed)}): its steps may cost "
            "several times the projection's; a short run with --train-steps measures them"
        )
    measured_bf16 = all(r.get("machine", {}).get("bfloat16_flags") for r in rows)
    same = any(machine.same_kind(r["machine"], here) for r in rows)
    if not same and measured_bf16 and not here.get("bfloat16_flags"):
        yield (
            "this CPU has no bfloat16 instructions and every measured kind had them: training "
            "may take several times the projection (a guess here, not a measurement)"
        )


def describe(estimate: Estimate, time_budget_minutes: Optional[float] = None) -> list:
    """The plan's lines, as the CLI shows them before Transform."""
    lines = [
        f"{estimate.train_examples:,} training examples, {estimate.train_steps:,} steps in "
        f"batches of {estimate.batch_size} ({estimate.epochs:.3g} epochs)"
    ]
    cap = (
        f"training capped by --time-budget {time_budget_minutes:g} min"
        if time_budget_minutes
        else "--time-budget MINUTES caps training"
    )
    if estimate.projected_minutes is None:
        lines.append(f"no projected time: {estimate.basis}; {cap}")
    else:
        lines.append(
            f"about {_minutes(estimate.projected_minutes)} on this machine, "
            f"{_minutes(estimate.training_minutes or 0.0)} of it training ({estimate.basis}); {cap}"
        )
    lines += [f"warning: {warning}" for warning in estimate.warnings]
    return lines


def plan_lines(estimate: Estimate, settings: dict, unlabeled: int = 0) -> list:
    """`describe`'s lines, and what the projection leaves out of the run's `settings`
    (CostEstimate's plan): the classes read from the data, the older spans of a window,
    pretraining (over the training texts and the `unlabeled` texts), the Tuner."""
    lines = describe(estimate, settings.get("time_budget_minutes"))
    if settings.get("classes"):
        lines.insert(1, f"{len(settings['classes'])} classes: {', '.join(settings['classes'])}")
    if settings.get("spans", 1) > 1:
        lines[0] += f" in the newest span; the window's other {settings['spans'] - 1} add theirs"
    if settings.get("pretrain_epochs"):
        texts = estimate.train_examples + unlabeled
        steps = math.ceil(settings["pretrain_epochs"] * texts / estimate.batch_size)
        read = (
            f"{texts:,} texts: {estimate.train_examples:,} training, {unlabeled:,} unlabelled"
            if unlabeled
            else "the training texts"
        )
        lines.append(
            f"{settings.get('pretrain_objective', 'masked')}-token pretraining comes first: "
            f"{steps:,} steps ({settings['pretrain_epochs']:g} epochs of {read}), not projected"
        )
    if settings.get("tuner_trials"):
        lines.append(f"the Tuner's {settings['tuner_trials']} trials come first, not projected")
    return lines


def _minutes(minutes: float) -> str:
    return f"{minutes:.1f} min" if minutes >= 1 else f"{minutes * 60:.0f} s"
