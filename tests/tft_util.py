"""The tests' shorthand for running a preprocessing_fn through tf.Transform in memory."""
from trainer_module.preprocessing import local, text


def analyze_and_transform(rows, custom_config, output_dir, preprocessing_fn=text.preprocessing_fn):
    """Returns (transformed rows, TFTransformOutput) for `rows` of {'text', 'label'}."""
    return local.analyze_and_transform(rows, preprocessing_fn, custom_config, output_dir)
