"""Masked-token pretraining (training/pretraining.py): the masking, the loss it trains, the
encoder it leaves to the classifier, and the Trainer reading only the training split for it."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from trainer_module.text_encoder.config import PAD_ID, PRESETS
from trainer_module.text_encoder.model import build_model, pretraining
from trainer_module.training.pretraining import Masking, mask_tokens, pretrain, replace_tokens

MASK, SPECIAL = 99, 1  # a mask id above the words; id 1 stands for a [CLS]-like special token


def padded_rows(seed: int = 0, rows: int = 400, length: int = 60) -> np.ndarray:
    """Rows of words 2..98 of random lengths 5..length, padded with 0, each opening with 1."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((rows, length), np.int64)
    for row in range(rows):
        n = rng.integers(5, length + 1)
        ids[row, :n] = rng.integers(2, MASK, size=n)
        ids[row, 0] = SPECIAL
    return ids


def test_masking_chooses_the_rate_of_each_rows_tokens_never_padding_or_special_ones():
    tf.random.set_seed(0)
    ids = padded_rows()
    masking = Masking(mask_id=MASK, random_ids=(2, MASK), special_ids=(PAD_ID, SPECIAL))
    masked, positions, labels, weights = (x.numpy() for x in mask_tokens(ids, masking))
    eligible = (ids != PAD_ID) & (ids != SPECIAL)
    np.testing.assert_array_equal(
        weights.sum(1), np.clip(np.round(eligible.sum(1) * 0.15), 1, masking.predictions)
    )
    used = weights > 0
    rows = np.nonzero(used)[0]
    chosen = positions[used]
    assert eligible[rows, chosen].all()  # never padding, never the special token
    np.testing.assert_array_equal(labels[used], ids[rows, chosen])  # labels: the originals
    assert (labels[~used] == 0).all()
    # Only chosen positions change, to the mask id, a random word or themselves.
    changed = masked != ids
    marked = np.zeros_like(changed)
    marked[rows, chosen] = True
    assert not (changed & ~marked).any()
    new = masked[rows, chosen]
    share_masked = (new == MASK).mean()
    share_random = ((new != MASK) & (new != labels[used])).mean()
    assert 0.75 < share_masked < 0.85 and 0.06 < share_random < 0.12  # 80% and 10% (less ties)
    assert ((new == MASK) | ((new >= 2) & (new < MASK))).all()


def test_a_row_of_padding_has_nothing_to_predict():
    ids = np.zeros((2, 8), np.int64)
    ids[1, :3] = [5, 6, 7]
    masking = Masking(mask_id=MASK, random_ids=(2, MASK), special_ids=(PAD_ID,), predictions=4)
    masked, _, _, weights = (x.numpy() for x in mask_tokens(ids, masking))
    assert weights[0].sum() == 0 and weights[1].sum() == 1  # round(3 x 0.15) = 0, at least 1
    np.testing.assert_array_equal(masked[0], ids[0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rate": 0.0}, "masking rate"),
        ({"random_ids": (5, 5)}, "random_ids"),
        ({"objective": "shuffled"}, "objective"),
    ],
)
def test_masking_refuses_settings_that_mask_nothing_or_draw_from_nothing(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Masking(**{"mask_id": MASK, "random_ids": (2, MASK), "special_ids": (0,), **kwargs})


def test_replacement_changes_the_rate_of_eligible_tokens_to_mostly_frequent_words():
    tf.random.set_seed(0)
    ids = padded_rows(rows=2000)
    masking = Masking(mask_id=MASK, random_ids=(2, MASK), special_ids=(PAD_ID, SPECIAL))
    replaced, labels, weights = (x.numpy() for x in replace_tokens(ids, masking))
    eligible = (ids != PAD_ID) & (ids != SPECIAL)
    np.testing.assert_array_equal(weights, eligible.astype("float32"))
    np.testing.assert_array_equal(labels, (replaced != ids).astype("float32"))
    assert (replaced[~eligible] == ids[~eligible]).all()  # padding and specials untouched
    assert 0.13 < labels[eligible].mean() < 0.15  # 15%, less the words drawn as themselves
    new = replaced[labels > 0]
    assert ((new >= 2) & (new < MASK)).all()
    # A Zipf law over ranks: the ten most frequent ids (2..11) drawn about half the time.
    assert 0.45 < ((new >= 2) & (new < 12)).mean() < 0.6


def tiny_classifier(**overrides):
    config = PRESETS["tiny"].replace(
        vocab_size=40,
        max_length=16,
        ngram_buckets=0,
        pretrain_epochs=1.0,
        dropout=0.0,
        **overrides,
    )
    return build_model(config, train_steps=10)


def corpus_batches(config, seed=0):
    """A corpus with something to learn: each row repeats one word (of 40), so that a masked
    token is told by the others."""
    words = np.random.default_rng(seed).integers(1, 41, size=(256, 1))
    ids = np.repeat(words, config.max_length, axis=1)
    return lambda: tf.data.Dataset.from_tensor_slices(ids.astype("int64")).repeat().batch(8)


@pytest.mark.slow
def test_pretraining_lowers_the_masked_token_loss_and_trains_the_classifiers_own_encoder():
    tf.random.set_seed(0)
    model = tiny_classifier()
    config = model.config
    assert config.embedding_rows == 1 + 40 + 1 + 1 and config.mask_id == 42
    encoder_before = [w.numpy().copy() for w in model.encoder.weights]
    head_before = [w.numpy().copy() for w in model.head.weights]
    record = pretrain(pretraining(model, corpus_batches(config)), 300, 16, 1e-2, 0.0)
    assert record["steps"] == 300
    assert record["last_loss"] < 0.5 * record["first_loss"]
    assert record["last_accuracy"] > 0.5 > record["first_accuracy"]
    # The classifier's own encoder weights changed (trained in place); its head did not.
    assert any(not np.allclose(a, w.numpy()) for a, w in zip(encoder_before, model.encoder.weights))
    for before, weight in zip(head_before, model.head.weights):
        np.testing.assert_array_equal(before, weight.numpy())
    # The supervised model starts from them: saved and loaded, the classifier is the same.
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"pretrained-{os.getpid()}.weights.h5")
    model.save_weights(path)
    fresh = tiny_classifier()
    fresh.load_weights(path)
    os.remove(path)
    for a, b in zip(model.weights, fresh.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.slow
def test_replaced_token_detection_learns_to_tell_words_out_of_place():
    tf.random.set_seed(0)
    model = tiny_classifier(pretrain_objective="replaced", mask_rate=0.3)
    record = pretrain(pretraining(model, corpus_batches(model.config)), 300, 16, 1e-2, 0.0)
    # Each row repeats one word: a replacement is any other word, told from its row.
    assert record["last_loss"] < 0.5 * record["first_loss"]
    assert record["last_accuracy"] > 0.9


def test_without_pretraining_the_embedding_has_no_mask_row():
    config = PRESETS["tiny"].replace(vocab_size=40)
    assert config.embedding_rows == 1 + 40 + 1 and config.pretrain_epochs == 0


@pytest.mark.slow
def test_the_trainer_pretrains_on_training_and_unlabelled_texts_never_validation_ones(
    text_encoder_run, tmp_path, monkeypatch
):
    from tests.conftest import REVIEWS, TEXT_ENCODER_OVERRIDES, review_spec
    from tests.family_util import run_family
    from trainer_module import features
    from trainer_module.training import inputs, wide_path

    pretraining_read, counted = [], []
    real_batches, real_count = wide_path.feature_batches, inputs.count_examples

    def recording(run, files, *args, **kwargs):
        pretraining_read.append(list(files))
        return real_batches(run, files, *args, **kwargs)

    def counting(files, *args, **kwargs):
        counted.append(list(files))
        return real_count(files, *args, **kwargs)

    monkeypatch.setattr(wide_path, "feature_batches", recording)
    monkeypatch.setattr(inputs, "count_examples", counting)
    # Texts without labels, as Transform writes the unlabelled split: label NO_LABEL.
    unlabeled = [
        {**row, features.LABEL: features.NO_LABEL} for row in text_encoder_run.transformed[:16]
    ]
    run = run_family(
        "text_encoder",
        REVIEWS,
        review_spec(),
        str(tmp_path),
        overrides={**TEXT_ENCODER_OVERRIDES, "pretrain_epochs": 1.0},
        train_steps=6,
        transform_of=text_encoder_run,
        unlabeled_rows=unlabeled,
    )
    labelled, unlabelled = run.fn_args.train_files
    assert "Split-unlabeled" in unlabelled
    assert pretraining_read and all(files == [labelled, unlabelled] for files in pretraining_read)
    # Validation texts never enter pretraining.
    assert not any(set(files) & set(run.fn_args.eval_files) for files in pretraining_read)
    # The supervised phase counted (and read) the labelled split alone.
    assert counted[0] == [labelled] and counted[1] == [unlabelled]
    history = json.load(open(os.path.join(run.fn_args.model_run_dir, "history.json")))
    texts = len(REVIEWS) + len(unlabeled)
    assert history["pretraining"]["texts"] == texts
    assert history["pretraining"]["unlabeled_texts"] == len(unlabeled)
    assert history["pretraining"]["steps"] == -(-texts // run.model.config.batch_size)
    assert history["config"]["pretrain_epochs"] == 1.0
    assert history["train_steps"] == 6


def test_the_unlabelled_split_never_reaches_a_supervised_phase():
    from tfx.components.trainer.fn_args_utils import FnArgs

    from trainer_module.training.inputs import TrainerRun

    fn_args = FnArgs(
        train_files=["/t/Transform/7/Split-train/*", "/t/Transform/7/Split-unlabeled/*"],
        eval_files=["/t/Transform/7/Split-eval/*"],
        custom_config={},
    )
    run = TrainerRun.from_fn_args(fn_args)
    assert run.train_files == ["/t/Transform/7/Split-train/*"]
    assert run.unlabeled_files == ["/t/Transform/7/Split-unlabeled/*"]
    with pytest.raises(ValueError, match="no labelled training split"):
        TrainerRun.from_fn_args(
            FnArgs(train_files=["/t/Split-unlabeled/*"], eval_files=[], custom_config={})
        )
