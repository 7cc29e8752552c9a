"""A from-scratch encoder-decoder Transformer for translation (Vaswani et al., 2017)."""

from typing import Optional

import keras
from keras import ops

from trainer_module.layers import (
    Dense,
    Dropout,
    EncoderStack,
    TokenEmbedding,
    TransformerBlock,
    few_rows_matmul,
    flat_matmul,
    position_layer,
)
from trainer_module.layers.configured import ConfiguredModel
from trainer_module.training.optimizers import adamw
from trainer_module.training.schedules import warmup_steps, warmup_then
from trainer_module.training.sequence_losses import MaskedSequenceCrossEntropy, MaskedTokenAccuracy
from trainer_module.translator.config import DECODER_INPUT_IDS, PAD_ID, SOURCE_IDS, TranslatorConfig


class Translator(ConfiguredModel):
    """Source ids -> encoder; [START]-shifted target ids + encoder output -> decoder -> logits.

    Args:
        config: TranslatorConfig. Vocabulary sizes (`source_rows`, `target_rows` ids), lengths,
            the stacks' shape, a shared embedding (`shared_vocabulary`: one vocabulary for
            both languages) and a tied output projection (`tie_output_embeddings`).

    Call: {"source_ids": (B, S), "decoder_input_ids": (B, T)} -> logits (B, T, target_rows).

    Example:
    >>> from trainer_module.translator.config import PRESETS
    >>> model = Translator(PRESETS["tiny"].replace(source_vocab_size=16, target_vocab_size=26))
    >>> ids = ops.convert_to_tensor([[5, 6, 0]])
    >>> tuple(model({"source_ids": ids, "decoder_input_ids": ids}).shape)
    (1, 3, 30)
    """

    config_class = TranslatorConfig

    def __init__(self, config: TranslatorConfig, **kwargs):
        super().__init__(**kwargs)
        if config.shared_vocabulary and config.source_rows != config.target_rows:
            raise ValueError("shared_vocabulary needs one vocabulary size for both languages")
        self.config = config
        d_model = config.d_model
        self.source_embedding = TokenEmbedding(config.source_rows, d_model, name="source_embedding")
        self.target_embedding = (
            self.source_embedding
            if config.shared_vocabulary
            else TokenEmbedding(config.target_rows, d_model, name="target_embedding")
        )
        self.source_positions = position_layer(
            config.positional, config.max_source_length, name="source_positions"
        )
        self.target_positions = position_layer(
            config.positional, config.target_positions, name="target_positions"
        )
        self.source_dropout = Dropout(config.dropout)
        self.target_dropout = Dropout(config.dropout)
        self.encoder = EncoderStack(
            config.encoder_layers,
            config.num_heads,
            config.ff_dim,
            config.dropout,
            config.norm_first,
            name="encoder",
        )
        self.decoder_blocks = [
            TransformerBlock(
                config.num_heads,
                config.ff_dim,
                config.dropout,
                config.norm_first,
                causal=True,
                cross_attention=True,
                name=f"decoder_{i}",
            )
            for i in range(config.decoder_layers)
        ]
        # A pre-norm stack leaves the residual stream unnormalised: normalise once at the end.
        self.decoder_norm = (
            keras.layers.LayerNormalization(epsilon=1e-6) if config.norm_first else None
        )
        self.output_projection = (
            None
            if config.tie_output_embeddings
            else Dense(config.target_rows, name="output_projection")
        )

    def build(self, input_shape=None):
        if self.output_projection is None:
            self.output_bias = self.add_weight(
                name="output_bias", shape=(self.config.target_rows,), initializer="zeros"
            )
        super().build(input_shape)

    def encode(self, source_ids, training=None):
        """(B, S) ids -> (memory (B, S, D), source mask (B, S), per-layer self-attention)."""
        source_mask = ops.not_equal(source_ids, PAD_ID)
        x = self.source_dropout(
            self.source_positions(self.source_embedding(source_ids)), training=training
        )
        x, attention = self.encoder(x, padding_mask=source_mask, training=training)
        return x, source_mask, attention

    def decode(self, decoder_input_ids, memory, source_mask, training=None):
        """(B, T) ids -> (logits (B, T, V), per-layer self-attention, per-layer cross-attention)."""
        x = self.target_dropout(
            self.target_positions(self.target_embedding(decoder_input_ids)), training=training
        )
        self_attention, cross_attention = [], []
        for block in self.decoder_blocks:
            x, self_weights, cross_weights = block(
                x, memory=memory, memory_mask=source_mask, training=training
            )
            self_attention.append(self_weights)
            cross_attention.append(cross_weights)
        return self._project(x), self_attention, cross_attention

    def start_decoding(
        self,
        memory,
        source_mask,
        max_length: Optional[int] = None,
        output_table=None,
        output_bias=None,
        repeats: int = 1,
    ) -> dict:
        """The decoding cache, batch first everywhere:
        - "history": per decoder block, the self-attention keys and values (B, H, T, Dk) of the
          positions decoded so far, the newest last: empty (T = 0), growing by one position per
          step; or, with `max_length`, T = max_length empty slots that only steps with
          `shift` may fill (for loops whose shapes cannot change: XLA, JAX). They belong to
          the hypothesis being decoded, so a beam search reorders them with it;
        - "memory": per decoder block, the encoder output's projected keys and values, and
          "source_mask": fixed for a source sentence;
        - "output_table" (tied output embedding): the projection, transposed once (or as given:
          an export stores it transposed, decoding.DecodingWeights); with `output_bias`, the
          columns of the ids that a search may write and their biases ("output_bias"), so that
          a step's logits are over those ids alone.

        `repeats`: each sentence's rows repeated that many times in a row (a beam search's
        hypotheses), after the memory's projection: a sentence's keys and values are projected
        once, not once per hypothesis.
        """
        history, projected = [], []
        batch = ops.shape(memory)[0] * repeats
        for block in self.decoder_blocks:
            attention = block.self_attention
            empty = ops.zeros(
                (batch, attention.num_heads, max_length or 0, attention.key_dim),
                dtype=memory.dtype,
            )
            history.extend([empty, empty])
            projected.extend(block.memory_attention.project_key_value(memory))
        if repeats > 1:
            projected = [ops.repeat(x, repeats, axis=0) for x in projected]
            source_mask = ops.repeat(source_mask, repeats, axis=0)
        cache = {
            "history": tuple(history),
            "memory": tuple(projected),
            "source_mask": ops.cast(source_mask, memory.dtype),
        }
        if self.output_projection is None:
            cache["output_table"] = (
                self._output_table(memory.dtype) if output_table is None else output_table
            )
            if output_bias is not None:
                cache["output_bias"] = output_bias
        return cache

    def decode_step(self, token_ids, index, cache, shift: bool = False):
        """(B, 1) ids at position `index` -> (logits (B, 1, V), the updated cache).

        Costs one position per block instead of the whole prefix: decode(prefix)[:, -1] without
        recomputing earlier positions. The history grows by the new position; with `shift` it
        keeps its length, its oldest slot dropped (a cache of `max_length` slots).
        """
        x = self.target_positions(self.target_embedding(token_ids), offset=index)
        x = ops.reshape(x, (-1, self.config.d_model))  # (B, D): the blocks' one-position steps
        history = []
        for i, block in enumerate(self.decoder_blocks):
            x, keys_values = block.step(
                x,
                index,
                cache["history"][2 * i : 2 * i + 2],
                cache["memory"][2 * i : 2 * i + 2],
                cache["source_mask"],
                shift=shift,
            )
            history.extend(keys_values)
        logits = self._project(x, cache.get("output_table"), cache.get("output_bias"))
        logits = ops.expand_dims(logits, 1)  # (B, 1, V)
        return logits, {**cache, "history": tuple(history)}

    def _project(self, x, output_table=None, output_bias=None):
        """Final LayerNorm (pre-norm) and the projection onto the target vocabulary (float32
        logits). `output_table`: the tied embedding already transposed to (D, V) and cast, as a
        decoding cache holds it (transposing it costs more than a decoding step's matmul);
        `output_bias`: the biases of its columns, where they are a subset of the ids."""
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        if self.output_projection is not None:
            return ops.cast(self.output_projection(x), "float32")
        if output_table is None:
            output_table = self._output_table(x.dtype)
        # A decoding step's few rows (x (B, D)) a row at a time: few_rows_matmul.
        product = few_rows_matmul if len(x.shape) == 2 else flat_matmul
        with keras.name_scope("output_projection"):  # as an untied one's ops are named
            logits = product(x, output_table)  # compute dtype
        # Logits in float32 whatever the compute dtype: the softmax and the beam scores use them.
        bias = self.output_bias if output_bias is None else output_bias
        return ops.cast(logits, "float32") + ops.cast(bias, "float32")

    def _output_table(self, dtype):
        """The tied output projection: the target embedding transposed, (D, V)."""
        return ops.transpose(ops.cast(self.target_embedding.embedding.embeddings, dtype))

    def call(self, inputs, training=None):
        memory, source_mask, _ = self.encode(inputs[SOURCE_IDS], training=training)
        logits, _, _ = self.decode(
            inputs[DECODER_INPUT_IDS], memory, source_mask, training=training
        )
        return logits


def build_model(config: TranslatorConfig, train_steps: int) -> keras.Model:
    """The translator, built and compiled with its training recipe: AdamW after a linear
    warmup (config.warmup_fraction of train_steps) with config.decay over train_steps,
    label-smoothed cross-entropy and token accuracy over the real (unpadded) target tokens."""
    model = Translator(config)
    warmup = warmup_steps(config.warmup_fraction, train_steps)
    model.compile(
        optimizer=adamw(
            warmup_then(config.decay, config.peak_learning_rate, warmup, train_steps),
            config.weight_decay,
        ),
        loss=MaskedSequenceCrossEntropy(config.label_smoothing),
        metrics=[MaskedTokenAccuracy()],
    )
    ids = keras.ops.ones((1, 2), dtype="int32")
    model({SOURCE_IDS: ids, DECODER_INPUT_IDS: ids})  # build the weights
    return model
