"""A KerasHub BERT backbone with a classification head (token ids in, class logits out)."""
import keras_hub

from trainer_module.bert.config import BertConfig


def bert_classifier(config: BertConfig) -> keras_hub.models.BertTextClassifier:
    """`BertBackbone.from_preset(config.backbone_preset)` + dropout + a dense head.

    Takes {"token_ids", "segment_ids", "padding_mask"}, each (B, sequence_length); returns
    logits (B, num_classes). Preprocessing happens in tf.Transform, hence preprocessor=None.
    """
    backbone = keras_hub.models.BertBackbone.from_preset(config.backbone_preset)
    if backbone.max_sequence_length < config.sequence_length:
        raise ValueError(f"sequence_length={config.sequence_length} exceeds the backbone's "
                         f"max_sequence_length={backbone.max_sequence_length}")
    return keras_hub.models.BertTextClassifier(
        backbone=backbone, num_classes=config.num_classes, preprocessor=None,
        dropout=config.dropout)
