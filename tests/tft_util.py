"""The tests' shorthand for running a preprocessing_fn through tf.Transform in memory."""
from trainer_module.preprocessing import local, text


def analyze_and_transform(rows, custom_config, output_dir, preprocessing_fn=text.preprocessing_fn):
    """Returns (transformed rows, TFTransformOutput) for `rows` of {'text', 'label'}."""
    return local.analyze_and_transform(rows, preprocessing_fn, custom_config, output_dir)


TINY_REVIEWS = [{"text": "great fun", "label": 1}, {"text": "awful and dull", "label": 0},
                {"text": "great great cast", "label": 1}, {"text": "dull plot", "label": 0}]


def tiny_text_classifier(transform_dir, **options):
    """(an untrained TransformerClassifier over 6 tokens, its TFTransformOutput), with the
    vocabulary of TINY_REVIEWS; `options` override the model's arguments."""
    import numpy as np

    from trainer_module.models.text_classifier import TransformerClassifier

    _, output = analyze_and_transform(TINY_REVIEWS, {"vocab_size": 10, "max_length": 6},
                                      str(transform_dir))
    model = TransformerClassifier(**{
        "vocab_size": text.embedding_rows(output), "max_length": 6, "d_model": 8,
        "num_heads": 2, "ff_dim": 8, "num_layers": 1, "dropout": 0.0, **options})
    model(np.zeros((1, 6), dtype="int64"))
    return model, output
