"""tf.Transform preprocessing_fns, one module per kind of input."""
