"""tf.Transform helpers the model families' preprocessing_fns share.

Each family's preprocessing_fn is written in TensorFlow ops alone, with no Python control flow
on tensors, so it is marked `tf.autograph.experimental.do_not_convert`: tf.Transform traces it
several times, and autograph's conversion of its source (and of every function it calls) cost
seconds per trace. The served models' tf.functions are traced without autograph for the same
reason (trainer_module/serving/archive.py)."""
