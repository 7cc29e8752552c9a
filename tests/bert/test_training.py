"""BERT's training batches (trainer_module/bert/training.py)."""

import numpy as np
import pytest
import tensorflow as tf

from trainer_module.bert.config import PRESETS
from trainer_module.bert.training import grouped_by_length, padded_lengths


def reviews(lengths, width=16):
    mask = np.array([[1] * n + [0] * (width - n) for n in lengths], "int32")
    inputs = {
        "token_ids": mask * 5,
        "segment_ids": mask * 0,
        "padding_mask": mask,
        "ngram_ids": np.arange(len(lengths))[:, None] * np.ones((1, 3), "int32"),
    }
    return tf.data.Dataset.from_tensor_slices((inputs, np.array(lengths)))


def test_training_batches_hold_one_length_bucket_each_cut_to_its_end():
    config = PRESETS["tiny"].replace(sequence_length=16, batch_size=2, length_multiple=4)
    lengths = [3, 9, 4, 12, 2, 10, 16, 1, 5, 11]
    grouped = grouped_by_length(reviews(lengths).batch(4), config)
    batches = [
        (x["ngram_ids"][:, 0].numpy().tolist(), x["token_ids"].shape[1], y.numpy().tolist())
        for x, y in grouped
    ]
    # Buckets of 4 pieces: pairs as they fill, in order; then each bucket's leftover.
    assert batches[:4] == [
        ([0, 2], 4, [3, 4]),
        ([1, 3], 12, [9, 12]),
        ([4, 7], 4, [2, 1]),
        ([5, 9], 12, [10, 11]),
    ]
    assert sorted(batches[4:]) == [([6], 16, [16]), ([8], 8, [5])]
    for x, y in grouped:  # the cut removes padding only
        assert np.all(x["padding_mask"].numpy().sum(axis=1) == y.numpy())
        assert x["ngram_ids"].shape[1] == 3


def test_padded_lengths_are_the_share_of_reviews_at_each_bucket_end():
    config = PRESETS["tiny"].replace(sequence_length=16, batch_size=2, length_multiple=4)
    lengths = [3, 9, 4, 12, 2, 10, 16, 1, 5, 11]
    assert padded_lengths(reviews(lengths).batch(3), config) == {
        4: 0.4,
        8: 0.1,
        12: 0.4,
        16: 0.1,
    }
    unbucketed = config.replace(length_multiple=0)
    assert padded_lengths(reviews(lengths).batch(3), unbucketed) == {16: 1.0}


def test_bert_refuses_replaced_token_pretraining():
    import pytest

    with pytest.raises(ValueError, match="masked-token prediction only"):
        PRESETS["tiny"].replace(pretrain_objective="replaced")


@pytest.mark.slow
def test_task_adaptive_pretraining_masks_by_the_vocabulary_and_trains_the_backbone_alone(
    tiny_bert_checkpoint,
):
    from lab.tiny_bert import VOCABULARY
    from trainer_module.bert.model import build_classifier, pretraining
    from trainer_module.training.pretraining import pretrain

    config = PRESETS["tiny"].replace(
        backbone_preset=tiny_bert_checkpoint, sequence_length=16, ngram_buckets=0
    )
    model = build_classifier(config)
    words = [i for i, token in enumerate(VOCABULARY) if token.isalpha()][:12]
    # A small corpus repeated: [CLS] 10 pieces [SEP] and padding, masked-token pretraining's
    # input (Transform's token_ids).
    rows = np.array(
        [[2, *np.roll(words, shift)[:10], 3, 0, 0, 0, 0] for shift in range(8)], "int64"
    )
    batches = tf.data.Dataset.from_tensor_slices(rows).repeat().batch(8)
    spec = pretraining(model, VOCABULARY, lambda: batches)
    assert spec.masking.mask_id == VOCABULARY.index("[MASK]")
    assert spec.masking.special_ids == (0, VOCABULARY.index("[CLS]"), VOCABULARY.index("[SEP]"))
    assert spec.masking.random_ids == (5, len(VOCABULARY))  # after the bracketed entries
    assert spec.masking.predictions == 3  # 15% of 16 pieces
    embedding = model.backbone.token_embedding.embeddings.numpy().copy()
    head = model.head.kernel.numpy().copy()
    record = pretrain(spec, steps=40, batch_size=8, learning_rate=3e-3, weight_decay=0.0)
    assert record["last_loss"] < record["first_loss"]
    assert not np.allclose(model.backbone.token_embedding.embeddings.numpy(), embedding)
    np.testing.assert_array_equal(model.head.kernel.numpy(), head)  # the head is fine-tuning's


@pytest.mark.slow
def test_the_bert_trainer_pretrains_on_labelled_and_unlabelled_texts_then_fine_tunes(
    bert_run, tmp_path
):
    import json
    import os

    from tests.conftest import REVIEWS, review_spec
    from tests.family_util import run_family
    from trainer_module import features

    unlabeled = [{**row, features.LABEL: features.NO_LABEL} for row in bert_run.transformed[:8]]
    run = run_family(
        "bert",
        REVIEWS,
        review_spec(),
        str(tmp_path),
        overrides={**bert_run.fn_args.custom_config["overrides"], "pretrain_epochs": 1.0},
        train_steps=4,
        transform_of=bert_run,
        unlabeled_rows=unlabeled,
    )
    history = json.load(open(os.path.join(run.fn_args.model_run_dir, "history.json")))
    texts = len(REVIEWS) + len(unlabeled)
    assert history["pretraining"]["texts"] == texts
    assert history["pretraining"]["unlabeled_texts"] == len(unlabeled)
    assert history["pretraining"]["steps"] == -(-texts // 8)
    assert history["config"]["pretrain_learning_rate"] == 1e-4  # a pretrained model's rate
    assert history["train_steps"] == 4
