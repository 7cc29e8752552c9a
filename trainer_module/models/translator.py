"""A from-scratch encoder-decoder Transformer for translation (Vaswani et al., 2017)."""
import keras
from keras import ops

from trainer_module.layers import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from trainer_module.models.translator_presets import TranslatorConfig

PAD_ID = 0


class TransformerTranslator(keras.Model):
    """Source ids -> encoder; [START]-shifted target ids + encoder output -> decoder -> logits.

    Args:
        source_vocab_size, target_vocab_size: embedding rows (reserved ids included).
        max_source_length, max_target_length: longest inputs (position tables).
        shared_embeddings: one embedding for both sides (needs one shared vocabulary).
        tie_output_embeddings: the output projection is the transposed target embedding.
        The rest: as TransformerEncoderBlock / TransformerDecoderBlock.

    Call: {"source_ids": (B, S), "decoder_input_ids": (B, T)} -> logits (B, T, target_vocab_size).

    Example:
    >>> model = TransformerTranslator(20, 30, 8, 8, d_model=8, num_heads=2, ff_dim=16,
    ...                               encoder_layers=1, decoder_layers=1)
    >>> ids = ops.convert_to_tensor([[5, 6, 0]])
    >>> tuple(model({"source_ids": ids, "decoder_input_ids": ids}).shape)
    (1, 3, 30)
    """

    def __init__(self, source_vocab_size: int, target_vocab_size: int, max_source_length: int,
                 max_target_length: int, d_model: int = 256, num_heads: int = 8,
                 ff_dim: int = 512, encoder_layers: int = 3, decoder_layers: int = 3,
                 dropout: float = 0.1, norm_first: bool = True, positional: str = "sinusoidal",
                 shared_embeddings: bool = False, tie_output_embeddings: bool = True, **kwargs):
        super().__init__(**kwargs)
        if shared_embeddings and source_vocab_size != target_vocab_size:
            raise ValueError("shared_embeddings needs one vocabulary for both languages")
        self.config = dict(
            source_vocab_size=source_vocab_size, target_vocab_size=target_vocab_size,
            max_source_length=max_source_length, max_target_length=max_target_length,
            d_model=d_model, num_heads=num_heads, ff_dim=ff_dim, encoder_layers=encoder_layers,
            decoder_layers=decoder_layers, dropout=dropout, norm_first=norm_first,
            positional=positional, shared_embeddings=shared_embeddings,
            tie_output_embeddings=tie_output_embeddings)
        position_layer = (SinusoidalPositionalEncoding if positional == "sinusoidal"
                          else LearnedPositionalEmbedding)

        self.source_embedding = TokenEmbedding(source_vocab_size, d_model, name="source_embedding")
        self.target_embedding = (self.source_embedding if shared_embeddings else
                                 TokenEmbedding(target_vocab_size, d_model, name="target_embedding"))
        self.source_positions = position_layer(max_source_length, name="source_positions")
        self.target_positions = position_layer(max_target_length, name="target_positions")
        self.source_dropout = keras.layers.Dropout(dropout)
        self.target_dropout = keras.layers.Dropout(dropout)
        self.encoder_blocks = [
            TransformerEncoderBlock(num_heads, ff_dim, dropout, norm_first, name=f"encoder_{i}")
            for i in range(encoder_layers)]
        self.decoder_blocks = [
            TransformerDecoderBlock(num_heads, ff_dim, dropout, norm_first, name=f"decoder_{i}")
            for i in range(decoder_layers)]
        # Pre-norm stacks leave the residual stream unnormalised: normalise once at the end.
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-6) if norm_first else None
        self.decoder_norm = keras.layers.LayerNormalization(epsilon=1e-6) if norm_first else None
        self.output_projection = None if tie_output_embeddings else keras.layers.Dense(
            target_vocab_size, name="output_projection")

    @classmethod
    def from_preset_config(cls, config: TranslatorConfig, source_vocab_size: int,
                           target_vocab_size: int) -> "TransformerTranslator":
        return cls(source_vocab_size=source_vocab_size, target_vocab_size=target_vocab_size,
                   max_source_length=config.max_source_length,
                   # Serving decodes up to max_decode_length tokens after [START].
                   max_target_length=max(config.max_target_length, config.max_decode_length + 1),
                   d_model=config.d_model, num_heads=config.num_heads, ff_dim=config.ff_dim,
                   encoder_layers=config.encoder_layers, decoder_layers=config.decoder_layers,
                   dropout=config.dropout, norm_first=config.norm_first,
                   positional=config.positional, shared_embeddings=config.shared_vocabulary,
                   tie_output_embeddings=config.tie_output_embeddings)

    def build(self, input_shape=None):
        if self.output_projection is None:
            self.output_bias = self.add_weight(name="output_bias",
                                               shape=(self.config["target_vocab_size"],),
                                               initializer="zeros")
        super().build(input_shape)

    def encode(self, source_ids, training=None):
        """(B, S) ids -> (memory (B, S, D), source mask (B, S), per-layer self-attention)."""
        source_mask = ops.not_equal(source_ids, PAD_ID)
        x = self.source_dropout(self.source_positions(self.source_embedding(source_ids)),
                                training=training)
        attention = []
        for block in self.encoder_blocks:
            x, weights = block(x, padding_mask=source_mask, training=training)
            attention.append(weights)
        if self.encoder_norm is not None:
            x = self.encoder_norm(x)
        return x, source_mask, attention

    def decode(self, decoder_input_ids, memory, source_mask, training=None):
        """(B, T) ids -> (logits (B, T, V), per-layer self-attention, per-layer cross-attention)."""
        x = self.target_dropout(self.target_positions(self.target_embedding(decoder_input_ids)),
                                training=training)
        self_attention, cross_attention = [], []
        for block in self.decoder_blocks:
            x, self_weights, cross_weights = block(x, memory, memory_mask=source_mask,
                                                   training=training)
            self_attention.append(self_weights)
            cross_attention.append(cross_weights)
        return self._project(x), self_attention, cross_attention

    def start_decoding(self, memory, source_mask, max_length: int) -> tuple:
        """The decoding cache: per decoder block, the encoder output's projected keys and
        values, and empty (B, H, max_length, Dk) self-attention keys and values; then the
        source mask. Batch first everywhere, so a beam search can reorder it."""
        cache = []
        batch = ops.shape(memory)[0]
        for block in self.decoder_blocks:
            attention = block.self_attention
            empty = ops.zeros((batch, attention.num_heads, max_length, attention.key_dim),
                              dtype=memory.dtype)
            cache.extend([*block.cross_attention.project_key_value(memory), empty, empty])
        # The mask as numbers: a beam search gathers the cache with take_along_axis.
        return tuple(cache) + (ops.cast(source_mask, memory.dtype),)

    def decode_step(self, token_ids, index, cache):
        """(B, 1) ids at position `index` -> (logits (B, 1, V), the updated cache).

        Costs one position per block instead of the whole prefix: decode(prefix)[:, -1] without
        recomputing earlier positions.
        """
        source_mask = cache[-1]
        x = self.target_positions(self.target_embedding(token_ids), offset=index)
        updated = []
        for i, block in enumerate(self.decoder_blocks):
            cross_keys, cross_values, self_keys, self_values = cache[4 * i: 4 * i + 4]
            x, (self_keys, self_values) = block.step(
                x, index, (self_keys, self_values), (cross_keys, cross_values), source_mask)
            updated.extend([cross_keys, cross_values, self_keys, self_values])
        return self._project(x), tuple(updated) + (source_mask,)

    def _project(self, x):
        """Final LayerNorm (pre-norm) and the projection onto the target vocabulary."""
        if self.decoder_norm is not None:
            x = self.decoder_norm(x)
        if self.output_projection is not None:
            return self.output_projection(x)
        table = self.target_embedding.embedding.embeddings  # (V, D)
        return ops.matmul(x, ops.transpose(ops.cast(table, x.dtype))) + ops.cast(
            self.output_bias, x.dtype)

    def call(self, inputs, training=None):
        memory, source_mask, _ = self.encode(inputs["source_ids"], training=training)
        logits, _, _ = self.decode(inputs["decoder_input_ids"], memory, source_mask,
                                   training=training)
        return logits

    def get_config(self):
        return {**super().get_config(), **self.config}
