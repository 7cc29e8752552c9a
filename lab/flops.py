"""The arithmetic of one training step, counted on its TensorFlow graph, and its share of a
machine's peak.

TensorFlow's profiler (tf.compat.v1.profiler, float_operation) reads a batched matrix product's
sizes without its adjoint flags: for the weight gradient of a Dense layer on (B, T, D) inputs,
BatchMatMulV2(x, dy, adj_x=True) multiplies (D, T) by (T, E) matrices, and the profiler counts
D where the contraction has T. On the CIFAR-10 hybrid (16 tokens, width 256) that made 141
GFLOP of a step whose matrix products hold 58: the "134% of the float32 peak" of the results.
This counts batched products from their shapes and flags, and every other op as the profiler
does.
"""

import math

BATCHED_PRODUCTS = ("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")


def batched_product_flops(op) -> int:
    """2 x broadcast batch x M x N x K of a BatchMatMul op, its adjoint flags read."""
    import numpy as np

    a, b = (list(t.shape) for t in op.inputs)
    if any(d is None for d in a + b):
        raise ValueError(f"{op.name}: unknown shapes {a} x {b}; trace the step with fixed shapes")
    m, k = (a[-1], a[-2]) if op.get_attr("adj_x") else (a[-2], a[-1])
    n = b[-2] if op.get_attr("adj_y") else b[-1]
    batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    return 2 * math.prod(batch) * m * n * k


def live_ops(graph) -> list:
    """The ops of a traced graph that run: those its outputs or its stateful ops (variable
    updates) depend on. A traced gradient also holds ops nothing reads (the gradient of a
    model's input, say), which TensorFlow prunes before running the step."""
    roots = [t.op for t in graph.outputs] + [
        op for op in graph.get_operations() if op.op_def is not None and op.op_def.is_stateful
    ]
    live, stack = set(), list(roots)
    while stack:
        op = stack.pop()
        if op in live:
            continue
        live.add(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return [op for op in graph.get_operations() if op in live]


def graph_flops(graph) -> int:
    """FLOPs of the ops of a traced graph that run (`live_ops`): batched products by
    `batched_product_flops`, the rest by TensorFlow's own per-op statistics (matrix products,
    convolutions and their gradients, element-wise ops)."""
    from tensorflow.python.framework import ops

    total = 0
    for op in live_ops(graph):
        if op.type in BATCHED_PRODUCTS:
            total += batched_product_flops(op)
            continue
        try:
            total += ops.get_stats_for_node_def(graph, op.node_def, "flops").value or 0
        except ValueError:  # an op TensorFlow has no count for (a read, a cast): none
            pass
    return total


def training_flops(model, inputs, labels) -> float:
    """FLOPs of one training step (forward, gradients, update) of a compiled Keras model on one
    batch of fixed shapes, counted on the traced step (`graph_flops`)."""
    import tensorflow as tf

    model.train_on_batch(inputs, labels)  # builds the optimizer's variables

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = model.compute_loss(x=x, y=y, y_pred=model(x, training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply(gradients, model.trainable_variables)
        return loss

    return float(graph_flops(step.get_concrete_function(inputs, labels).graph))


def share_of_peak(achieved_tflops: float, peak_tflops: float, what: str = "the step") -> float:
    """achieved / peak; above 1, a RuntimeError: the count or the peak is wrong, and no
    results file may say otherwise."""
    share = achieved_tflops / peak_tflops
    if share > 1.0:
        raise RuntimeError(
            f"{what} ran at {achieved_tflops:.3f} TFLOP/s, {share:.0%} of the measured peak "
            f"{peak_tflops:.3f}: the FLOP count or the peak is wrong"
        )
    return share
