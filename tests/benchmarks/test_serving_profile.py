"""How the serving profile splits a traced request into parts, and the int8 benchmark's ratios
to its peer: plain Python over made-up kernel times, no model."""

from benchmarks.int8_serving import ratio_table
from benchmarks.serving_profile import CLASSIFIER_PARTS, TRANSLATOR_PARTS, by_part

PREFIX = "StatefulPartitionedCall_1/StatefulPartitionedCall/"


def test_a_classifier_request_is_split_and_the_transform_call_counted_once():
    kernels = [
        # The Transform layer: one call node, then its own kernels under their own names.
        (PREFIX + "transform_features_layer/StatefulPartitionedCall", 100, 50),
        ("bert_tokenizer_1/FastWordpieceTokenizeWithOffsets", 110, 30),
        ("StringNGrams/StringNGrams", 140, 5),
        (PREFIX + "bert_classifier_1/token_embedding_1/GatherV2", 160, 4),
        (PREFIX + "bert_classifier_1/transformer_layer_0_1/self_attention_layer_1/einsum", 170, 20),
        (
            PREFIX + "bert_classifier_1/transformer_layer_5_1/feedforward_output_dense_1/MatMul",
            200,
            10,
        ),
        (PREFIX + "bert_classifier_1/ngram_logit_1/GatherV2", 215, 2),
        (PREFIX + "bert_classifier_1/logits_1/BiasAdd", 220, 1),
        (PREFIX + "Max", 150, 3),  # the padding trim, after Transform
    ]
    parts = by_part(kernels, CLASSIFIER_PARTS)
    names = [name for name, _ in CLASSIFIER_PARTS]
    assert parts[names[0]] == 50  # the call's own time; its kernels are inside it
    assert parts[names[1]] == 4
    assert parts[names[2]] == 30
    assert parts[names[3]] == 3  # the n-gram path and the logits
    assert parts[names[4]] == 3
    assert sum(parts.values()) == 90


def test_a_translator_request_puts_the_while_loop_in_the_search_steps():
    kernels = [
        (PREFIX + "transform_features_layer/StatefulPartitionedCall", 0, 10),
        ("apply_vocab/WordpieceTokenizeWithOffsets", 2, 5),
        (PREFIX + "StatefulPartitionedCall/encoder_1/encoder_layer_0/MatMul", 20, 7),
        (PREFIX + "StatefulPartitionedCall/while/body/_1/while/decoder/MatMul", 30, 4),
        (PREFIX + "StatefulPartitionedCall/while/cond/_2/while/Less", 35, 1),
    ]
    parts = by_part(kernels, TRANSLATOR_PARTS)
    names = [name for name, _ in TRANSLATOR_PARTS]
    assert [parts[n] for n in names] == [10, 5, 7]


def test_the_ratio_table_divides_each_one_request_p50_by_the_peers():
    results = {
        "float32 export": {"validation_accuracy": 0.9, "saved_model": {"p50_ms": 8.0}},
        "ONNX Runtime float32, model part": {"p50_ms": 2.0},
        "ONNX Runtime int8 (dynamic), model part": {"p50_ms": 1.0},
    }
    table = ratio_table(results)
    assert table["columns"][2:] == ["÷ ONNX Runtime float32", "÷ ONNX Runtime int8 (dynamic)"]
    assert table["rows"] == [
        ["float32 export, saved_model", 8.0, 4.0, 8.0],
        ["ONNX Runtime float32, model part", 2.0, 1.0, 2.0],
        ["ONNX Runtime int8 (dynamic), model part", 1.0, 0.5, 1.0],
    ]
