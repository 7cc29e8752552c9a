import numpy as np
import pytest

from trainer_module.bert import FAMILY
from trainer_module.bert.model import bert_classifier

get_preset = FAMILY.config


def test_classifier_from_a_local_preset(tiny_bert_preset):
    model = bert_classifier(get_preset("tiny", {"backbone_preset": tiny_bert_preset}))
    inputs = {"token_ids": np.array([[2, 30, 31, 3, 0, 0]]),
              "segment_ids": np.zeros((1, 6), dtype="int32"),
              "padding_mask": np.array([[1, 1, 1, 1, 0, 0]])}
    assert tuple(model(inputs).shape) == (1, 2)
    assert model.backbone.num_layers == 2


def test_sequence_longer_than_the_backbone_is_refused(tiny_bert_preset):
    with pytest.raises(ValueError, match="exceeds the backbone's max_sequence_length=64"):
        bert_classifier(get_preset("tiny", {"backbone_preset": tiny_bert_preset,
                                                  "sequence_length": 128}))


def test_presets_reject_unknown_fields_and_bad_fractions():
    with pytest.raises(ValueError, match="unknown BertConfig fields"):
        get_preset("tiny", {"hidden": 3})
    with pytest.raises(ValueError, match="head_fraction"):
        get_preset("tiny", {"head_fraction": 1.0})
