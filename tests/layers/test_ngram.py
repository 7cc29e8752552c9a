import numpy as np
from keras import ops

from trainer_module.layers import NgramLogit, naive_bayes_ratios


def test_ngram_logit_sums_ratio_times_coefficient_over_the_ids():
    layer = NgramLogit(4)
    layer.build((None, 3))
    layer.set_ratios([0.0, 1.0, -2.0, 0.5, 3.0])
    layer.coefficients.assign([9.0, 2.0, 1.0, 4.0, 0.0])
    ids = np.array([[1, 2, 0], [3, 3, 0], [0, 0, 0]])
    out = ops.convert_to_numpy(layer(ids))
    np.testing.assert_allclose(out, [1 * 2 - 2 * 1, 2 * 0.5 * 4, 0.0])
    scaled = NgramLogit(4, rate_scale=3.0)
    scaled.build((None, 3))
    for weight, source in zip(scaled.weights, layer.weights):
        weight.assign(source)
    np.testing.assert_allclose(ops.convert_to_numpy(scaled(ids)), 3 * out)


def test_naive_bayes_ratios_are_smoothed_log_count_ratios_with_padding_at_zero():
    counts = np.array(
        [
            [7, 1, 0, 3],  # class 0: reviews holding ids 0..3
            [7, 3, 1, 0],
        ]
    )  # class 1
    p, q = np.array([8, 4, 2, 1.0]), np.array([8, 2, 1, 4.0])
    expected = np.log(p / p.sum()) - np.log(q / q.sum())
    expected[0] = 0
    np.testing.assert_allclose(naive_bayes_ratios(counts), expected, rtol=1e-6)
