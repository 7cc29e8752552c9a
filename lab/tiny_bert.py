"""Writes a tiny, randomly initialised BERT, as a KerasHub preset directory or as a Hugging
Face checkpoint (Transformers' layout, safetensors weights).

Pretrained presets download their weights at run time; these are built here, so the BERT
model family can be tested and run offline end to end:

    python -m lab.tiny_bert outputs/bert_tiny_random [--format keras]
    python -m lab.tiny_bert outputs/bert_tiny_hf --format transformers

The checkpoint's weights are drawn with NumPy under Transformers' own key names, with no Keras
involved, so that loading it (trainer_module/bert/checkpoint.py) is tested against an
independent source. Its `style` is "bert_model" (as saved from Transformers' BertModel: no
prefix, LayerNorm weight/bias, a position-ids buffer) or "pretraining" (as the original BERT
scripts name them: a `bert.` prefix, LayerNorm gamma/beta, and the pretraining heads under
`cls.`).

The vocabulary is written out below: BERT's special tokens, punctuation, a few hundred common
English and movie-review words, and every letter and digit alone and as a `##` continuation,
so that any ASCII word has a WordPiece segmentation.
"""

import argparse
import json
import os
import string

import numpy as np

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = """
the a an and or but of to in on at for with by from as is was are were be been it its this
that these those i you he she we they me my your his her our their not no never very too so
just only also even still all some any more most much many one two three first last new old
good great bad best worst well better worse love loved loves hate hated like liked enjoy
enjoyed film films movie movies story plot acting actor actors actress cast director script
scene scenes score music ending end character characters performance performances role
wonderful brilliant beautiful beautifully superb excellent amazing perfect charming moving
funny fun delight delightful masterpiece heartfelt clever smart tight thrilling gorgeous
captivated recommended joy warm genuinely absolute absolutely highly surprising
awful terrible boring dull lifeless mess tedious flat stupid lazy predictable confused
disaster clumsy cynical wooden chore waste painfully badly horribly grating utter bored
avoid skip money time minute minutes hour hours year years watch watched watching see saw
seen make makes made feel felt think thought expected little lot nothing every never ever
what how who why when where there here up out about over after before again then than
people family friend town winter night set based book novel trailer festival screen
""".split()
PUNCTUATION = list("!?.,;:'\"-()/*&%$#@") + ["—", "…", "★"]
CHARACTERS = list(string.ascii_lowercase + string.digits)

VOCABULARY = list(
    dict.fromkeys(SPECIAL + PUNCTUATION + WORDS + CHARACTERS + ["##" + c for c in CHARACTERS])
)


def write_tiny_preset(
    directory: str,
    num_layers: int = 2,
    hidden_dim: int = 32,
    num_heads: int = 2,
    intermediate_dim: int = 64,
    max_sequence_length: int = 512,
    seed: int = 0,
) -> str:
    """Saves a random BertBackbone and an uncased BertTokenizer to `directory`."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCABULARY, lowercase=True)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(VOCABULARY),
        num_layers=num_layers,
        num_heads=num_heads,
        hidden_dim=hidden_dim,
        intermediate_dim=intermediate_dim,
        max_sequence_length=max_sequence_length,
    )
    os.makedirs(directory, exist_ok=True)
    backbone.save_to_preset(directory)
    tokenizer.save_to_preset(directory)
    return directory


def transformers_weights(config: dict, style: str = "bert_model", seed: int = 0) -> dict:
    """Random float32 weights of a BERT `config` (Transformers' config.json fields) by their
    Transformers key names: (out, in) dense kernels, as torch.nn.Linear stores them."""
    if style not in ("bert_model", "pretraining"):
        raise ValueError(f"style must be 'bert_model' or 'pretraining', not {style!r}")
    rng = np.random.default_rng(seed)
    hidden, inner = config["hidden_size"], config["intermediate_size"]

    def draw(*shape):
        return rng.normal(0.0, 0.2, size=shape).astype("float32")

    def norm(prefix):
        scale, offset = ("gamma", "beta") if style == "pretraining" else ("weight", "bias")
        return {
            f"{prefix}.LayerNorm.{scale}": 1.0 + draw(hidden),
            f"{prefix}.LayerNorm.{offset}": draw(hidden),
        }

    def dense(prefix, out, into):
        return {f"{prefix}.weight": draw(out, into), f"{prefix}.bias": draw(out)}

    weights = {
        "embeddings.word_embeddings.weight": draw(config["vocab_size"], hidden),
        "embeddings.position_embeddings.weight": draw(config["max_position_embeddings"], hidden),
        "embeddings.token_type_embeddings.weight": draw(config["type_vocab_size"], hidden),
        **norm("embeddings"),
        **dense("pooler.dense", hidden, hidden),
    }
    for i in range(config["num_hidden_layers"]):
        layer = f"encoder.layer.{i}"
        for name in ("query", "key", "value"):
            weights.update(dense(f"{layer}.attention.self.{name}", hidden, hidden))
        weights.update(
            {
                **dense(f"{layer}.attention.output.dense", hidden, hidden),
                **norm(f"{layer}.attention.output"),
                **dense(f"{layer}.intermediate.dense", inner, hidden),
                **dense(f"{layer}.output.dense", hidden, inner),
                **norm(f"{layer}.output"),
            }
        )
    if style == "pretraining":
        weights = {"bert." + key: value for key, value in weights.items()}
        weights.update(
            {
                "cls.predictions.bias": draw(config["vocab_size"]),
                **dense("cls.predictions.transform.dense", hidden, hidden),
                **dense("cls.seq_relationship", 2, hidden),
            }
        )
    else:  # BertModel saves its position ids buffer
        weights["embeddings.position_ids"] = np.arange(
            config["max_position_embeddings"], dtype="int64"
        )[None]
    return weights


def tiny_transformers_config(
    num_layers: int = 2,
    hidden_dim: int = 32,
    num_heads: int = 2,
    intermediate_dim: int = 64,
    max_sequence_length: int = 512,
) -> dict:
    """A config.json of a tiny BERT over VOCABULARY, in Transformers' field names."""
    return {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "vocab_size": len(VOCABULARY),
        "hidden_size": hidden_dim,
        "num_hidden_layers": num_layers,
        "num_attention_heads": num_heads,
        "intermediate_size": intermediate_dim,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": max_sequence_length,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
    }


def write_tiny_checkpoint(
    directory: str, style: str = "bert_model", seed: int = 0, weights: dict = None, **shape
) -> str:
    """Writes a random tiny BERT in Transformers' layout: config.json, model.safetensors,
    vocab.txt (VOCABULARY), tokenizer_config.json (uncased). `weights` replaces the drawn
    ones (tests write broken checkpoints with it); `shape`: tiny_transformers_config's."""
    from safetensors.numpy import save_file

    config = tiny_transformers_config(**shape)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    save_file(
        transformers_weights(config, style, seed) if weights is None else weights,
        os.path.join(directory, "model.safetensors"),
    )
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(VOCABULARY) + "\n")
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, f)
    return directory


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Writes a tiny random BERT.")
    parser.add_argument("directory")
    parser.add_argument(
        "--format",
        choices=("keras", "transformers"),
        default="keras",
        help="a KerasHub preset, or a Hugging Face checkpoint",
    )
    args = parser.parse_args(argv)
    write = write_tiny_checkpoint if args.format == "transformers" else write_tiny_preset
    print(write(args.directory))


if __name__ == "__main__":
    main()
