"""The encoder-decoder translator's typed config, its presets and its Tuner search space (pure
data: no TensorFlow, no Keras)."""

import dataclasses
from typing import Mapping

from trainer_module.family import ExportConfig, PresetConfig, check_decay, default_search_space

# Ids before the vocabulary's pieces or words, in both languages.
RESERVED_TOKENS = ("[PAD]", "[UNK]", "[START]", "[END]")
PAD_ID, UNK_ID, START_ID, END_ID = range(len(RESERVED_TOKENS))
# The model's inputs and labels: Transform's outputs (preprocessing.py).
SOURCE_IDS = "source_ids"  # int64 (B, max_source_length), 0 = padding
DECODER_INPUT_IDS = "decoder_input_ids"  # [START] y1 ... yn, 0-padded
TARGET_IDS = "target_ids"  # y1 ... yn [END], 0-padded: the labels
LENGTH_MULTIPLE = 4  # batches are trimmed to their longest sentence, rounded up to this
# Training batches group sentences of similar length (tokens, the longer side), so a batch pads
# to about its own length instead of the longest sentence among 128 random ones.
BATCH_LENGTH_BOUNDARIES = (8, 12, 16, 20, 24, 32)
STOPPING_RULES = ("exact", "heuristic")  # TranslatorConfig.stopping
OUTPUT_VOCABULARIES = ("targets", "all")  # TranslatorConfig.output_vocabulary


@dataclasses.dataclass(frozen=True)
class TranslatorConfig(ExportConfig, PresetConfig):
    """Every knob of the translation model, its vocabularies and its training."""

    # The export's field (quantize) is ExportConfig's: trainer_module/family.py.

    # Vocabularies and lengths: shared by tf.Transform (which builds the ids) and the model.
    # "wordpiece": subwords learned from the training split, case and punctuation kept, so
    # the served model writes natural text (wordpiece.py); "word": lower-cased words with
    # punctuation split off, the published Multi30k recipes' tokenization.
    tokenizer: str = "wordpiece"
    # Pieces (wordpiece: the learner's target size) or words (word: top-k) per language; the
    # Trainer sets the numbers Transform actually kept.
    source_vocab_size: int = 10_000  # Multi30k German has ~7.8k words seen at least twice
    target_vocab_size: int = 8_000  # Multi30k English: ~5.9k words seen at least twice
    min_frequency: int = 2  # word: rarer words become [UNK], as in the published recipes
    # One vocabulary over both languages, of at most source_vocab_size + target_vocab_size
    # pieces, and one embedding for source, target and (tied) output.
    shared_vocabulary: bool = False
    max_source_length: int = 40  # tokens; 99.9% of Multi30k sentences are shorter
    max_target_length: int = 40  # including [START] / [END]
    # Architecture: the anchor's 3+3 layers of 256 (README, Translation benchmark).
    d_model: int = 256
    num_heads: int = 8  # 32 dimensions per head
    ff_dim: int = 1024  # 4 x d_model: the anchor's, and Vaswani et al.'s ratio
    encoder_layers: int = 3  # 3 + 3: the anchor's; Multi30k's short captions need no more
    decoder_layers: int = 3  # (the decoder's depth, as the encoder's)
    dropout: float = 0.1  # the paper's for base models
    norm_first: bool = True  # pre-norm (+ a final LayerNorm): trains stably at a higher rate
    positional: str = "sinusoidal"  # "sinusoidal" (fixed, extends to any length) or "learned"
    tie_output_embeddings: bool = True  # the output projection reuses the target embedding
    # Optimisation: AdamW, linear warmup then a decay.
    batch_size: int = 128  # sentences per replica, bucketed by length
    peak_learning_rate: float = 1e-3  # pre-norm tolerates it; the paper's rate peaks near 7e-4
    warmup_fraction: float = 0.1  # of the training steps
    decay: str = "inverse_sqrt"  # after warmup (trainer_module/family.py: DECAYS)
    weight_decay: float = 0.01  # AdamW's default scale; biases and LayerNorm are exempt
    label_smoothing: float = 0.1  # the paper's
    evaluations: int = 4  # validation passes spread over the training steps
    # The export's weights: the mean of those after each of the last k evaluations (1: the
    # last weights); training/averaging.py.
    average_last: int = 1
    # Decoding in the served model.
    max_decode_length: int = 40  # generated tokens at most, [END] included
    beam_width: int = 4  # 1 = greedy; 4 as in the paper
    # Finished translations are ranked by score / ((5 + tokens) / 6) ** length_penalty (Wu et
    # al., 2016, whose 0.6 this is); 0 ranks by score alone, which favours short translations.
    length_penalty: float = 0.6
    # When a sentence's search stops (decoding.py). "exact": once no open hypothesis can
    # overtake its best finished translation, whatever tokens would follow (bounded at
    # max_decode_length): what a search without a stopping rule returns, as the TensorFlow
    # Model Garden's beam search stops. "heuristic": once none would by ending at the next
    # token (akin to Hugging Face's default): sooner above length_penalty 0, and a hypothesis
    # that would gain from growing longer is lost. On every training measured the exact rule
    # scored as high or higher on val, for a little more time per sentence
    # (docs/benchmarks/translation.md).
    stopping: str = "exact"
    # Which ids the served search may write with a shared vocabulary: "targets", the ids of
    # the training targets' words (Transform's `target_words`: the pieces seen only in sources
    # are never a target), so that each step projects onto those alone; "all", the whole
    # vocabulary (what separate vocabularies always write). "targets" kept BLEU on val and
    # made the served search faster (docs/benchmarks/translation.md).
    output_vocabulary: str = "targets"
    # The served model's search of small batches compiled by XLA (decoding.py: one program per
    # power-of-two batch size, compiled on its first request; docs/benchmarks/translation.md).
    # Off by default: TensorFlow Serving, and so Vertex AI's prebuilt containers, refuse XLA
    # functions unless started with --xla_cpu_compilation_enabled. Python TensorFlow (`serve`,
    # MLflow, BulkInferrer) runs them.
    jit_compile: bool = False
    # The most sentences whose search jit_compile compiles; a larger batch runs the plain
    # search, whose steps cost their arithmetic more than their ops' overheads. XLA's CPU
    # backend refuses a bfloat16 product beyond a few rows, a limit that differs by CPU
    # (docs/benchmarks/translation.md): lower it where it refuses, or train in float32
    # (--mixed-precision off).
    jit_compile_max_batch: int = 4

    def __post_init__(self):
        self.check_quantize()
        if self.tokenizer not in ("wordpiece", "word"):
            raise ValueError(f"tokenizer must be 'wordpiece' or 'word', not {self.tokenizer!r}")
        if self.positional not in ("sinusoidal", "learned"):
            raise ValueError(
                f"positional must be 'sinusoidal' or 'learned', not {self.positional!r}"
            )
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}"
            )
        if self.max_target_length < 2:
            raise ValueError("max_target_length must leave room for [START]/[END] and a token")
        check_decay(self.decay)
        if self.beam_width < 1:
            raise ValueError(f"beam_width must be >= 1, not {self.beam_width}")
        if not 1 <= self.average_last <= self.evaluations:
            raise ValueError(
                f"average_last must be between 1 and evaluations={self.evaluations}, "
                f"not {self.average_last}"
            )
        if self.jit_compile_max_batch < 1:
            raise ValueError(
                f"jit_compile_max_batch must be 1 or more, not {self.jit_compile_max_batch}"
            )
        if self.length_penalty < 0:
            raise ValueError(f"length_penalty must be >= 0, not {self.length_penalty}")
        if self.stopping not in STOPPING_RULES:
            raise ValueError(f"stopping must be one of {STOPPING_RULES}, not {self.stopping!r}")
        if self.output_vocabulary not in OUTPUT_VOCABULARIES:
            raise ValueError(
                f"output_vocabulary must be one of {OUTPUT_VOCABULARIES}, "
                f"not {self.output_vocabulary!r}"
            )

    @property
    def source_rows(self) -> int:
        """Source ids the model embeds: the reserved tokens, then the vocabulary."""
        return len(RESERVED_TOKENS) + self.source_vocab_size

    @property
    def target_rows(self) -> int:
        return len(RESERVED_TOKENS) + self.target_vocab_size

    @property
    def target_positions(self) -> int:
        """Positions the decoder embeds: training targets, or [START] + the longest decode."""
        return max(self.max_target_length, self.max_decode_length + 1)


PRESETS: Mapping[str, TranslatorConfig] = {
    # For tests: builds and trains a step in about a second.
    "tiny": TranslatorConfig(
        source_vocab_size=200,
        target_vocab_size=200,
        min_frequency=1,
        max_source_length=16,
        max_target_length=16,
        d_model=32,
        num_heads=2,
        ff_dim=64,
        encoder_layers=1,
        decoder_layers=1,
        batch_size=16,
        warmup_fraction=0.25,
        max_decode_length=16,
        beam_width=2,
        evaluations=1,
    ),
    # The embedded corpus in a few minutes on a CPU: every word kept (min_frequency 1), as its
    # 600 pairs repeat a small word list.
    "small": TranslatorConfig(
        min_frequency=1,
        d_model=64,
        num_heads=4,
        ff_dim=128,
        encoder_layers=2,
        decoder_layers=2,
        batch_size=32,
        warmup_fraction=0.1667,  # 100 of the embedded corpus's 600 steps
        max_decode_length=24,
        max_source_length=24,
        max_target_length=24,
    ),
    # Multi30k, in the published anchor's regime (a 3+3 Transformer of 256 with a feed-forward
    # network of 1,024): one WordPiece vocabulary over both languages, shared by the source,
    # target and output embeddings; an evaluation per epoch at the task's recipe epochs.
    # Dropout 0.3 (transformer_tiny's), inverse square-root decay, length penalty 1.0, batches
    # of 64 with weight decay 0.1, and the export averaging the last five evaluations' weights:
    # each chosen by the runs in docs/benchmarks/translation.md, which give their figures.
    "base": TranslatorConfig(
        shared_vocabulary=True,
        source_vocab_size=5_000,
        target_vocab_size=5_000,
        dropout=0.3,
        batch_size=64,
        # 1,200 of the recipe's 15,407 steps (34 epochs of Multi30k's 29,000 pairs at 64).
        warmup_fraction=0.0779,
        weight_decay=0.1,
        evaluations=34,
        average_last=5,
        length_penalty=1.0,
    ),
}

SEARCH_SPACE = default_search_space(("encoder_layers", "decoder_layers"))  # the Tuner's (--tune)


def transform_config(config: TranslatorConfig) -> dict:
    """What the preprocessing_fn reads from Transform's custom_config."""
    return {
        name: getattr(config, name)
        for name in (
            "tokenizer",
            "source_vocab_size",
            "target_vocab_size",
            "min_frequency",
            "shared_vocabulary",
            "max_source_length",
            "max_target_length",
        )
    }
