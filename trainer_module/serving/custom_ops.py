"""Registers the TensorFlow ops that the graphs of BERT models and of the translator use
(tensorflow-text's WordPiece).

Import it before loading such a SavedModel in a process that has not imported keras_hub;
the Evaluator does (`Evaluator(module_path=...)`), and so does `tfx-transformers predict`.
"""

import tensorflow_text  # noqa: F401  (the import registers the ops)
