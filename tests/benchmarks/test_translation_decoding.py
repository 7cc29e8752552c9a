import pytest

from benchmarks.translation_decoding import cell, decoding_part, projection_table, ranking_table

LOOP = "while/body/_1/while/"


@pytest.mark.parametrize(
    "op, part",
    [
        # Names as TensorFlow's profiler gives them for the search's ops ("scope/name:Type").
        (LOOP + "MatMul_12:MatMul", "output projection"),
        (LOOP + "feed_forward_5/inner_1/Relu:_FusedMatMul", "feed-forward networks"),
        (LOOP + "feed_forward_norm_3/moments/mean:Mean", "layer norm"),
        (LOOP + "value_1/BiasAdd:_FusedMatMul", "attention projections"),
        (LOOP + "output_7/BiasAdd:BiasAdd", "attention projections"),
        (LOOP + "output_projection_1/BiasAdd:_FusedMatMul", "output projection"),
        # A tied one's product of a few rows (layers.few_rows_matmul), in a branch of a cond.
        (
            LOOP + "output_projection/cond/then/_754/while/output_projection/cond/MatMul:"
            "BatchMatMulV2",
            "output projection",
        ),
        (LOOP + "einsum/Einsum:BatchMatMulV2", "attention scores and mixing"),
        (LOOP + "TopKV2_1:TopKV2", "ranking"),
        # decoding.best_per_row's blocks and log-sum-exp, under its name scope.
        (LOOP + "ranking/GatherV2:GatherV2", "ranking"),
        (LOOP + "ranking_1/Exp:Exp", "ranking"),
        (LOOP + "GatherV2_3:GatherV2", "cache and hypotheses reordered"),
        (LOOP + "add_9:AddV2", "the rest"),
        ("encoder/encoder_0/feed_forward/inner/Relu:_FusedMatMul", "encoder and set-up (once)"),
    ],
)
def test_each_op_of_the_search_is_put_in_its_part(op, part):
    assert decoding_part(op) == part


def test_projection_table_times_both_products_at_each_row_count():
    columns, rows = projection_table(d_model=8, dtype="float32", repeats=1, products=2)
    assert columns[:2] == ["vocabulary", "rows"] and len(columns) == 5
    assert [(v, r) for v, r, *_ in rows] == [
        (v, str(n)) for v in ("9,600", "5,100") for n in (1, 2, 4, 8, 16)
    ]
    # The ratio is of the times as measured; the cells show them rounded to 0.001 ms, so the
    # ratio must lie within what the rounded cells allow (and its own rounding to 0.01).
    for _, _, one, by_rows, ratio in rows:
        one, by_rows, ratio = float(one), float(by_rows), float(ratio)
        low = (by_rows - 0.0005) / (one + 0.0005)
        high = (by_rows + 0.0005) / max(one - 0.0005, 1e-9)
        assert low - 0.005 <= ratio <= high + 0.005, (one, by_rows, ratio)


def test_ranking_table_times_both_rankings_at_each_row_count():
    """ranking_table also checks that both rankings give the same columns and values."""
    columns, rows = ranking_table(repeats=1, steps=1)
    assert columns == ["vocabulary", "rows", "top_k (ms)", "in blocks (ms)", "ratio"]
    assert [(v, r) for v, r, *_ in rows] == [
        (v, str(n)) for v in ("9,600", "5,100") for n in (4, 64, 256)
    ]


def test_a_variant_that_xla_refused_reads_as_refused_in_the_table():
    assert cell(1234.56, ",.1f", " ms") == "1,234.6 ms"
    assert cell(0.5, ".0%") == "50%"
    assert cell(float("nan"), ",.1f", " ms") == cell(float("nan"), ".2f") == "refused (XLA)"
