"""What the tests and the benchmarks share and the product never imports (a test checks):
FLOP counting on a traced step (flops.py), tf.Transform run in memory as TFX's Transform
runs it (local_transform.py), and tiny random BERT checkpoints written with NumPy
(tiny_bert.py). It is not part of the wheel or the pipeline image."""
