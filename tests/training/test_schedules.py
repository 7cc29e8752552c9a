import math

import keras
import pytest
from keras import ops

from trainer_module.training.schedules import WarmupInverseSqrt, warmup_cosine


def lr(schedule, step):
    return float(ops.convert_to_numpy(schedule(step)))


def test_linear_warmup_peak_then_inverse_sqrt_decay():
    schedule = WarmupInverseSqrt(peak_learning_rate=1e-3, warmup_steps=100)
    assert lr(schedule, 0) == pytest.approx(1e-5)
    assert lr(schedule, 49) == pytest.approx(0.5e-3)
    assert lr(schedule, 99) == pytest.approx(1e-3)
    assert lr(schedule, 399) == pytest.approx(1e-3 * math.sqrt(100 / 400))
    assert lr(schedule, 9999) == pytest.approx(1e-4)


def test_matches_the_paper_formula():
    d_model, warmup = 512, 4000
    schedule = WarmupInverseSqrt((d_model * warmup) ** -0.5, warmup)
    for step in (1, 1000, 4000, 20000):
        paper = d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert lr(schedule, step - 1) == pytest.approx(paper, rel=1e-5)


def test_warmup_then_linear_decay_to_zero():
    from trainer_module.training.schedules import WarmupLinearDecay

    schedule = WarmupLinearDecay(peak_learning_rate=2e-5, warmup_steps=10, total_steps=110)
    assert lr(schedule, 0) == pytest.approx(2e-6)
    assert lr(schedule, 9) == pytest.approx(2e-5)
    assert lr(schedule, 60) == pytest.approx(2e-5 * 50 / 100)
    assert lr(schedule, 110) == pytest.approx(0.0)
    assert lr(schedule, 500) == pytest.approx(0.0)


def test_linear_warmup_then_cosine_decay_to_zero():
    schedule = warmup_cosine(peak_learning_rate=1e-3, warmup_steps=10, total_steps=110)
    assert isinstance(schedule, keras.optimizers.schedules.CosineDecay)  # Keras' own
    assert lr(schedule, 0) == pytest.approx(1e-4)
    assert lr(schedule, 9) == pytest.approx(1e-3)  # the peak at the end of warmup
    assert lr(schedule, 9 + 101 // 2) == pytest.approx(0.5e-3, rel=0.02)  # half-way down
    assert lr(schedule, 110) == pytest.approx(0.0, abs=1e-12)
    assert lr(schedule, 500) == pytest.approx(0.0, abs=1e-12)


def test_the_history_records_the_cosine_schedule_as_a_preset_states_it():
    from trainer_module.training.schedules import settings_of

    assert settings_of(warmup_cosine(1e-3, 4, 16)) == {
        "peak_learning_rate": 1e-3,
        "warmup_steps": 4,
        "total_steps": 16,
    }
    assert settings_of(WarmupInverseSqrt(1e-3, 4)) == {
        "peak_learning_rate": 1e-3,
        "warmup_steps": 4,
    }


def hand_written_warmup_cosine(peak, warmup, total, step):
    """The schedule the project wrote itself before Keras' (issue 78), for comparison: it held
    the peak for one step more."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(max((step - warmup) / (total - warmup), 0.0), 1.0)
    return peak * 0.5 * (1.0 + math.cos(math.pi * progress))


@pytest.mark.parametrize("warmup_fraction, total", [(0.05, 1099), (0.25, 400), (0.23, 4921)])
def test_keras_cosine_decay_gives_the_hand_written_rates_at_every_quarter(warmup_fraction, total):
    warmup = round(warmup_fraction * total)  # as the ViT's build_model resolves it
    schedule = warmup_cosine(3e-3, warmup, total)
    one_step = 3e-3 * math.pi / (total - warmup)  # the most a rate moves in a step
    for step in (0, total // 4, total // 2, 3 * total // 4, total):
        expected = hand_written_warmup_cosine(3e-3, warmup, total, step)
        assert abs(lr(schedule, step) - expected) <= one_step, step
    for step in range(warmup):  # the warmup exactly
        assert lr(schedule, step) == pytest.approx(3e-3 * (step + 1) / warmup)


def test_adamw_with_ema_ends_training_with_the_averaged_weights():
    import keras
    import numpy as np

    from trainer_module.training.optimizers import adamw

    assert adamw(0.1, 0.0, ema_momentum=0.5).use_ema and not adamw(0.1, 0.0).use_ema
    x, y = np.ones((4, 1), "float32"), np.full((4, 1), 10.0, "float32")

    def trained_weight(ema_momentum):
        model = keras.Sequential(
            [keras.Input((1,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")]
        )
        model.compile(optimizer=adamw(0.1, 0.0, ema_momentum), loss="mse")
        model.fit(x, y, epochs=5, verbose=0)
        return float(model.get_weights()[0][0, 0])

    raw, averaged = trained_weight(0.0), trained_weight(0.5)
    # The weight rises from 0 towards 10 every step; fit ends with the moving average of the
    # steps' weights, which lags behind the last one.
    assert 0 < averaged < raw


def test_triangular_rises_from_a_fifth_of_the_peak_then_falls_to_its_end_share():
    from trainer_module.training.schedules import Triangular

    schedule = Triangular(peak_learning_rate=1.0, warmup_steps=20, total_steps=120)
    assert lr(schedule, 0) == pytest.approx(0.2)
    assert lr(schedule, 10) == pytest.approx(0.6)  # half-way up
    assert lr(schedule, 20) == pytest.approx(1.0)
    assert lr(schedule, 70) == pytest.approx(1.0 - 0.93 / 2)  # half-way down
    assert lr(schedule, 120) == pytest.approx(0.07)
    assert lr(schedule, 500) == pytest.approx(0.07)


def test_scaled_sgd_moves_only_the_listed_variables_faster_and_decays_all_alike():
    import keras
    import numpy as np

    from trainer_module.training.optimizers import nesterov_sgd

    def step(scale, weight_decay):
        fast = keras.Variable(np.ones(2, "float32"), name="fast")
        slow = keras.Variable(np.ones(2, "float32"), name="slow")
        optimizer = nesterov_sgd(0.1, 0.0, weight_decay, {fast.path: scale})
        optimizer.apply([np.ones(2, "float32")] * 2, [fast, slow])
        return float(fast.numpy()[0]), float(slow.numpy()[0])

    assert step(1.0, 0.0) == pytest.approx((0.9, 0.9))
    assert step(8.0, 0.0) == pytest.approx((1.0 - 0.8, 0.9))  # 8 x the step for `fast` only
    # Decoupled decay (w -= w x 0.5 x 0.1) is not scaled: both lose 0.05 more.
    assert step(8.0, 0.5) == pytest.approx((1.0 - 0.8 - 0.05, 0.9 - 0.05))


def test_a_fit_with_ema_validates_the_average_and_logs_the_raw_weights_validation():
    import keras
    import numpy as np
    import tensorflow as tf

    from trainer_module.training.history import ema_callbacks
    from trainer_module.training.optimizers import adamw

    x, y = np.ones((4, 1), "float32"), np.full((4, 1), 10.0, "float32")
    validation = tf.data.Dataset.from_tensors((x, y))  # one batch, as the Trainer's datasets
    model = keras.Sequential(
        [keras.Input((1,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")]
    )
    model.compile(optimizer=adamw(0.1, 0.0, ema_momentum=0.5), loss="mse")
    plain = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    plain.compile(optimizer=adamw(0.1, 0.0), loss="mse")
    assert ema_callbacks(plain, validation, 1) == []  # none without an optimizer's EMA
    raw_weights = []
    record = keras.callbacks.LambdaCallback(  # before SwapEMAWeights: the raw weights
        on_epoch_end=lambda epoch, logs: raw_weights.append(float(model.get_weights()[0][0, 0]))
    )
    history = model.fit(
        x,
        y,
        epochs=3,
        validation_data=validation,
        callbacks=[record, *ema_callbacks(model, validation, 1)],
        verbose=0,
    ).history

    averaged = float(model.get_weights()[0][0, 0])
    raw = raw_weights[-1]
    assert 0 < averaged < raw < 10
    # Validation read the average (the weights fit ends with); val_raw_loss, the last raw ones.
    assert history["val_loss"][-1] == pytest.approx((10 - averaged) ** 2, rel=1e-5)
    assert history["val_raw_loss"] == [pytest.approx((10 - raw) ** 2, rel=1e-5)]


def test_a_scaled_adamw_step_is_the_scale_times_adamws():
    """ScaledAdamW (adamw with scales): a variable's gradient step is its scale times AdamW's
    (the first step moves every weight by about the learning rate); unnamed variables move
    as under AdamW."""
    import keras
    import numpy as np

    from trainer_module.training.optimizers import ScaledAdamW, adamw

    def one_step(scales):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dense(1)])
        before = [w.numpy() for w in model.weights]
        optimizer = adamw(0.1, 0.0, scales=scales(model) if scales else None)
        model.compile(optimizer=optimizer, loss="mse")
        x = np.arange(12, dtype="float32").reshape(4, 3)
        model.train_on_batch(x, np.ones((4, 1), "float32"))
        return model, [w.numpy() - b for w, b in zip(model.weights, before)]

    _, plain = one_step(None)
    model, scaled = one_step(lambda m: {v.path: 0.25 for v in m.layers[0].weights})
    assert isinstance(model.optimizer, ScaledAdamW)
    for step, reference in zip(scaled[:2], plain[:2]):  # the first Dense's kernel and bias
        np.testing.assert_allclose(step, 0.25 * reference, rtol=1e-5)
    for step, reference in zip(scaled[2:], plain[2:]):
        np.testing.assert_allclose(step, reference, rtol=1e-6)
    assert np.abs(plain[0]).max() > 0.05


def test_every_family_states_its_warmup_as_a_fraction_of_its_training_steps():
    from trainer_module.families import FAMILIES
    from trainer_module.training.schedules import warmup_steps

    for family in FAMILIES.values():
        for name in family.presets:
            fields = family.config(name, {}).to_dict()
            assert "warmup_fraction" in fields and "warmup_steps" not in fields, (family, name)
    # The recipes' warmups as measured (their results files): the text encoder's 300 of 1,248
    # steps on IMDB, the translator's 1,200 of 15,407 on Multi30k and 100 of the embedded
    # corpus's 600.
    for family, preset, steps, measured in (
        ("text_encoder", "small", 1_248, 300),
        ("translator", "base", 15_407, 1_200),
        ("translator", "small", 600, 100),
    ):
        fraction = FAMILIES[family].config(preset, {}).warmup_fraction
        assert warmup_steps(fraction, steps) == measured, (family, preset)
    assert warmup_steps(0.0, 10) == 1
    with pytest.raises(ValueError, match="warmup_fraction must be in"):
        warmup_steps(1.5, 10)
