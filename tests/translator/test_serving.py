"""The translator's export (from the session's real training run, overfitted to PAIRS:
tests/conftest.py): tokenization, decoding and detokenization inside the graph."""

import shutil

import numpy as np
import pytest
import tensorflow as tf

from tests.conftest import PAIRS
from trainer_module.translator.decoding import RANK_BLOCK, DecodingWeights, make_generate
from trainer_module.translator.preprocessing import TARGET_VOCABULARY, output_ids, vocabulary_tokens
from trainer_module.translator.serving import detokenize, export

TRANSLATIONS = [target for _, target in PAIRS]  # natural text: cased, detokenized


def joined(pieces) -> str:
    """WordPiece pieces as text: `##` pieces join the piece before them."""
    return "".join(p[2:] if p.startswith("##") else " " + p for p in pieces).strip()


def example(source: str, target: str = None) -> bytes:
    def text(value):
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))

    feature = {"source": text(source)}
    if target is not None:
        feature["target"] = text(target)
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def keras_search(model, output, sources, output_vocabulary=None):
    """The Keras model's beam search of raw sources as its config decodes them, over the ids
    that the export may write (output_vocabulary, default the config's)."""
    config = model.config
    writable = (output_vocabulary or config.output_vocabulary) == "targets"
    source_ids = tf.cast(
        output.transform_features_layer()({"source": tf.constant(sources)})["source_ids"],
        tf.int32,
    )
    return make_generate(
        model,
        config.max_decode_length,
        config.beam_width,
        config.length_penalty,
        weights=DecodingWeights(model, output_ids(output)) if writable else None,
        stopping=config.stopping,
    )(source_ids)[:, 1:]


def test_the_beam_search_export_translates_raw_strings_exactly(translator_run):
    loaded = tf.saved_model.load(translator_run.export_dir)  # beam width 2: the run's config
    assert {"serving_default", "translate", "transform_features", "attention"} <= set(
        loaded.signatures
    )
    result = loaded.signatures["translate"](source=tf.constant([s for s, _ in PAIRS]))
    # As written (case and punctuation), [START]/[END] and padding removed.
    assert [t.decode() for t in result["translation"].numpy()] == TRANSLATIONS
    ids = result["token_ids"].numpy()
    assert ids.shape == (4, 11)  # max_decode_length
    assert ids[0].tolist()[:6] == translator_run.transformed[0]["target_ids"][:6].tolist()


def test_translate_transformed_searches_transforms_ids_as_translate_does(translator_run):
    """The beam search alone, on Transform's source ids (what ONNX converters take): the ids
    `translate` answers for the same sentences."""
    loaded = tf.saved_model.load(translator_run.export_dir)
    ids = loaded.signatures["translate"](source=tf.constant([s for s, _ in PAIRS]))["token_ids"]
    source_ids = loaded.signatures["transform_features"](
        examples=tf.constant([example(s, t) for s, t in PAIRS])
    )["source_ids"]
    alone = loaded.signatures["translate_transformed"](source_ids=source_ids)["token_ids"]
    assert alone.numpy().tolist() == ids.numpy().tolist()


def test_the_served_model_reads_its_vocabulary_once_when_loaded(translator_run, tmp_path):
    """The WordPiece tables are filled where the SavedModel is loaded, not at every request (a
    table built inside the traced function re-reads its file at each call): with the assets
    gone after loading, it still translates."""
    export_dir = shutil.copytree(translator_run.export_dir, tmp_path / "model")
    loaded = tf.saved_model.load(str(export_dir))
    shutil.rmtree(export_dir / "assets")
    result = loaded.signatures["translate"](source=tf.constant([s for s, _ in PAIRS]))
    assert [t.decode() for t in result["translation"].numpy()] == TRANSLATIONS


def test_tf_examples_with_and_without_a_target(translator_run):
    loaded = tf.saved_model.load(translator_run.export_dir)
    # tf.Examples, with and without a target: the same translation; teacher-forced counts
    # only where there is a target.
    served = loaded.signatures["serving_default"](
        examples=tf.constant([example(PAIRS[0][0], PAIRS[0][1]), example(PAIRS[1][0])])
    )
    assert [t.decode() for t in served["translation"].numpy()] == TRANSLATIONS[:2]
    pieces = float(np.count_nonzero(translator_run.transformed[0]["target_ids"]))  # + [END]
    assert served["target_tokens"].numpy().tolist() == [pieces, 0.0]
    assert served["correct_tokens"].numpy().tolist() == [pieces, 0.0]
    reference = loaded.signatures["transform_features"](examples=tf.constant([example(*PAIRS[2])]))[
        "reference"
    ].numpy()
    assert reference.tolist() == [PAIRS[2][1].encode()]  # the target as written


def test_attention_signature_aligns_each_generated_token_with_the_source(translator_run):
    loaded = tf.saved_model.load(translator_run.export_dir)
    result = loaded.signatures["attention"](source=tf.constant([PAIRS[0][0], PAIRS[2][0]]))

    def text(tokens):
        return np.vectorize(lambda t: t.decode())(tokens.numpy())

    source, target = text(result["source_tokens"]), text(result["target_tokens"])
    source_mask, target_mask = result["source_mask"].numpy(), result["target_mask"].numpy()
    assert joined(source[0][source_mask[0]]) == PAIRS[0][0]  # the pieces of the source
    written = target[0][target_mask[0]].tolist()
    assert written[-1] == "[END]" and joined(written[:-1]) == PAIRS[0][1]
    weights = result["cross_attention"].numpy()
    assert weights.shape[:3] == (2, 1, 2)  # (batch, decoder layers, heads, target, source)
    assert weights.shape[3:] == (11, source.shape[1])
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    assert np.all(weights[0, ..., ~source_mask[0]] < 1e-6)  # padding gets no attention


def test_greedy_decoding_and_the_maximum_length(translator_run):
    """The graph the export wraps, run eagerly: greedy decoding gives the same translations, and
    decoding stops after max_decode_length tokens, before [END]."""
    model, output = translator_run.model, translator_run.output
    words = tf.constant(vocabulary_tokens(output, TARGET_VOCABULARY))
    layer = output.transform_features_layer()
    source_ids = tf.cast(
        layer({"source": tf.constant([s for s, _ in PAIRS])})["source_ids"], tf.int32
    )
    greedy = make_generate(model, max_decode_length=11, beam_width=1)(source_ids)[:, 1:]
    assert [t.decode() for t in detokenize(greedy, words).numpy()] == TRANSLATIONS
    short = make_generate(model, max_decode_length=3, beam_width=1)(source_ids[2:3])[:, 1:]
    assert short.numpy().tolist() == [greedy.numpy()[2, :3].tolist()]
    assert detokenize(short, words).numpy().tolist() == [
        joined(words.numpy()[greedy.numpy()[2, :3]].astype(str)).encode()
    ]
    assert np.all(short.numpy() != 3)  # cut before [END]


@pytest.mark.slow
def test_an_export_with_the_search_under_xla_translates_as_the_plain_export(
    translator_run, tmp_path
):
    """jit_compile=true: the SavedModel keeps the compiled search (loaded by TensorFlow alone)
    and translates batches on and off a power-of-two bucket as the default export does."""
    from trainer_module.translator.model import Translator
    from trainer_module.translator.serving import export

    model = Translator(translator_run.model.config.replace(jit_compile=True))
    ids = np.ones((1, 2), "int32")
    model({"source_ids": ids, "decoder_input_ids": ids})
    model.set_weights(translator_run.model.get_weights())
    export(model, translator_run.output, str(tmp_path))
    translate = tf.saved_model.load(str(tmp_path)).signatures["translate"]
    sources = [s for s, _ in PAIRS]
    for batch in (sources[:1], sources[:3], sources):
        result = translate(source=tf.constant(batch))["translation"].numpy()
        assert [t.decode() for t in result] == TRANSLATIONS[: len(batch)]


@pytest.mark.slow
def test_a_mixed_precision_export_stores_bfloat16_weights_and_decodes_as_the_keras_model(
    translator_run, tmp_path
):
    """A model trained in mixed bfloat16 is exported with its kernels also stored in bfloat16
    and the output table transposed (decoding.DecodingWeights), and translates exactly what the
    Keras model's search does."""
    import keras

    from trainer_module.translator.model import Translator
    from trainer_module.translator.serving import export

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model = Translator(translator_run.model.config)
        ids = np.ones((1, 2), "int32")
        model({"source_ids": ids, "decoder_input_ids": ids})
        model.set_weights(translator_run.model.get_weights())
        export(model, translator_run.output, str(tmp_path))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    sources = [s for s, _ in PAIRS]
    keras_ids = keras_search(model, translator_run.output, sources)
    loaded = tf.saved_model.load(str(tmp_path))
    served = loaded.signatures["translate"](source=tf.constant(sources))["token_ids"]
    np.testing.assert_array_equal(served.numpy(), keras_ids.numpy())
    stored = tf.train.load_checkpoint(str(tmp_path / "variables" / "variables"))
    dtypes = stored.get_variable_to_dtype_map()
    kernels = [w for w in model.weights if w._autocast]
    assert sum(dtype == tf.bfloat16 for dtype in dtypes.values()) == len(kernels) + 1


def test_one_tied_embedding_and_the_export_decodes_as_the_keras_model(translator_run):
    """The run shares one vocabulary: the source and target embeddings and the output
    projection are one variable. The export (output_vocabulary "targets", the default) stores
    the output table's columns for the ids that the run's training targets hold, and its beam
    search gives the ids of the Keras model's search over those ids."""
    model, output = translator_run.model, translator_run.output
    assert model.config.shared_vocabulary and model.config.tie_output_embeddings
    assert model.config.output_vocabulary == "targets"
    table = model.source_embedding.embedding.embeddings
    assert model.target_embedding is model.source_embedding
    tables = [w for w in model.weights if tuple(w.shape) == tuple(table.shape)]
    assert len(tables) == 1 and tables[0] is table  # no untied copy anywhere
    sources = [s for s, _ in PAIRS]
    keras_ids = keras_search(model, output, sources)
    loaded = tf.saved_model.load(translator_run.export_dir)
    served = loaded.signatures["translate"](source=tf.constant(sources))["token_ids"]
    np.testing.assert_array_equal(served.numpy(), keras_ids.numpy())
    writable = output_ids(output)  # Transform's target_words, in the pipeline's run
    vocabulary = len(vocabulary_tokens(output, TARGET_VOCABULARY))
    assert 4 < len(writable) < vocabulary
    assert set(served.numpy().ravel()) <= set(writable)
    stored = tf.train.list_variables(f"{translator_run.export_dir}/variables/variables")
    shapes = [tuple(shape) for _, shape in stored]
    # The transposed output table with those columns alone (padded to a multiple of
    # RANK_BLOCK for the ranking in blocks) and their ids, beside the (V, D) embedding.
    d_model = model.config.d_model
    assert (d_model, -(-len(writable) // RANK_BLOCK) * RANK_BLOCK) in shapes
    assert (len(writable),) in shapes
    assert (d_model, vocabulary) not in shapes and (vocabulary, d_model) in shapes


@pytest.mark.slow
def test_an_export_writing_every_id_decodes_as_the_keras_search_over_all_of_them(
    translator_run, tmp_path
):
    """--set output_vocabulary=all: the export stores the whole transposed output table and
    its search writes what the Keras model's unrestricted search writes."""
    model, output = translator_run.model, translator_run.output
    trained = model.config
    model.config = trained.replace(output_vocabulary="all")
    try:
        export(model, output, str(tmp_path / "all"))
    finally:
        model.config = trained
    sources = [s for s, _ in PAIRS]
    keras_ids = keras_search(model, output, sources, output_vocabulary="all")
    loaded = tf.saved_model.load(str(tmp_path / "all"))
    served = loaded.signatures["translate"](source=tf.constant(sources))["token_ids"]
    np.testing.assert_array_equal(served.numpy(), keras_ids.numpy())
    stored = tf.train.list_variables(str(tmp_path / "all" / "variables" / "variables"))
    shapes = [tuple(shape) for _, shape in stored]
    vocabulary = len(vocabulary_tokens(output, TARGET_VOCABULARY))
    assert (trained.d_model, -(-vocabulary // RANK_BLOCK) * RANK_BLOCK) in shapes
    # Its ids are every id: one (V,) variable more than the default export stores (the
    # model's own output bias is (V,) in both).
    default = tf.train.list_variables(f"{translator_run.export_dir}/variables/variables")
    default_shapes = [tuple(shape) for _, shape in default]
    assert shapes.count((vocabulary,)) == default_shapes.count((vocabulary,)) + 1
