"""tf.Transform helpers the model families' preprocessing_fns share."""
