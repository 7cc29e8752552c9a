"""Benchmark: translation recipes under any Keras backend, compared by greedy BLEU.

    python -m benchmarks.translation_recipes --prepare --data ../shared/data/multi30k
    KERAS_BACKEND=jax python -m benchmarks.translation_recipes --output results.jsonl \\
        --recipe base:epochs=40,checkpoints=10/20/26/30/40 --recipe base:dropout=0.1
    python -m benchmarks.translation_recipes --results-from results.jsonl --name NAME

The pipeline benchmark (`translation_pipeline.py`) trains one recipe in an hour of the CPU; on a
GPU (JAX) this trains several in minutes, to choose which one the CPU hour is spent on. A recipe
is `NAME:FIELD=VALUE,...`: preset `base` with TranslatorConfig fields replaced; `preset=P`
starts from another preset, `epochs=E` (default 20) trains that long, `checkpoints=A/B/...`
scores the weights after those epochs (default: the last), each beside the average of the
weights after the last `average` (default 5) epochs up to it.

Data (`--prepare`, TensorFlow; written once to `--cache`): Multi30k's pairs, the WordPiece
vocabularies learned as Transform learns them (`wordpiece.learn` over the training split's word
counts: one joint vocabulary of 10,000 pieces, and separate ones of 10,000 German / 8,000
English pieces, for `shared_vocabulary=false`), and the ids made as `preprocessing.py` makes
them. A *selection* split of about 4% of the training pairs (seeded hash, seed 7) is held out:
recipes are chosen on it, so the pipeline's validation BLEU is not what picks them; both are
printed. Training batches are grouped by length as `training.py` groups them, and trimmed as it
trims them under TensorFlow (under JAX they keep one width: a compilation per shape costs more
than the padding); the model and its compile are the trainer's (`build_model`), under
mixed_bfloat16. BLEU is greedy
(beam 4 adds about a point in the pipeline's snapshots), detokenized as the served model
detokenizes (`wordpiece.detokenize`), sacreBLEU 13a cased and lower-cased.
"""

import argparse
import collections
import gzip
import json
import os
import time

import numpy as np

from benchmarks.recipes import bucket, emitter, parse_recipe

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "..", "shared", "data", "multi30k")
CACHE = os.path.join(REPO, "outputs", "translation_recipes.npz")
SELECTION_PERCENT, SELECTION_SEED = 4, 7
VOCABULARIES = {"joint": (10_000, None), "separate": (10_000, 8_000)}  # pieces (de, en)
MAX_LENGTH = 40  # the base preset's source and target lengths


def _lines(data: str, name: str) -> list:
    with gzip.open(os.path.join(data, name), "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def prepare(data: str, cache: str) -> None:
    """Learns the vocabularies, makes the ids and writes them to `cache` (TensorFlow)."""
    import tensorflow as tf

    from trainer_module.translator import wordpiece

    text = {
        (split, side): _lines(data, f"{split}.{side}.gz")
        for split in ("train", "val")
        for side in ("de", "en")
    }
    words = {key: [line.split() for line in lines] for key, lines in text.items()}

    def counts(*keys):
        return collections.Counter(w for key in keys for line in words[key] for w in line)

    arrays = {"val_en": np.array(text["val", "en"], dtype=object)}
    selected = np.array([bucket(str(i), SELECTION_SEED) < SELECTION_PERCENT for i in range(29_000)])
    arrays["selection_en"] = np.array(text["train", "en"], dtype=object)[selected]
    for name, (de_size, en_size) in VOCABULARIES.items():
        if en_size is None:
            de_vocab = en_vocab = wordpiece.learn(
                counts(("train", "de"), ("train", "en")).items(), de_size
            )
        else:
            de_vocab = wordpiece.learn(counts(("train", "de")).items(), de_size)
            en_vocab = wordpiece.learn(counts(("train", "en")).items(), en_size)
        arrays[f"{name}_de_vocabulary"] = np.array(de_vocab, dtype=object)
        arrays[f"{name}_en_vocabulary"] = np.array(en_vocab, dtype=object)
        for side, vocabulary in (("de", de_vocab), ("en", en_vocab)):
            path = os.path.join(os.path.dirname(cache) or ".", f".{name}_{side}.vocab")
            with open(path, "w") as f:
                f.write("".join(f"{piece}\n" for piece in vocabulary))
            for split in ("train", "val"):
                ragged = wordpiece.tokenize(tf.ragged.constant(words[split, side]), path)
                ids = ragged.to_tensor(shape=[None, MAX_LENGTH + 1]).numpy()
                if split == "train":
                    arrays[f"{name}_selection_{side}"] = ids[selected]
                    ids = ids[~selected]
                arrays[f"{name}_{split}_{side}"] = ids
            os.remove(path)
    os.makedirs(os.path.dirname(cache) or ".", exist_ok=True)
    np.savez_compressed(cache, **arrays)
    print({k: v.shape for k, v in arrays.items()})


def model_arrays(de: np.ndarray, en: np.ndarray) -> tuple:
    """(source_ids, decoder_input_ids, target_ids), as preprocessing.py pads and shifts them."""
    from trainer_module.translator.config import END_ID, START_ID

    source = de[:, :MAX_LENGTH].astype("int32")
    body = en[:, : MAX_LENGTH - 1].astype("int32")
    lengths = (body > 0).sum(1)
    decoder = np.concatenate([np.full((len(en), 1), START_ID, "int32"), body], axis=1)
    target = np.concatenate([body, np.zeros((len(en), 1), "int32")], axis=1)
    target[np.arange(len(en)), lengths] = END_ID
    return source, decoder, target


def batches(source, decoder, target, batch_size: int, seed: int, trim: bool = True):
    """Training batches for ever: each pass shuffled, then grouped into the length buckets of
    training.py and trimmed to their longest sentence (rounded up to LENGTH_MULTIPLE); with
    `trim` false, all MAX_LENGTH wide (one shape: JAX compiles a step per shape, and on a GPU
    a compilation costs more than the padding)."""
    from trainer_module.translator.config import BATCH_LENGTH_BOUNDARIES, LENGTH_MULTIPLE

    lengths = np.maximum((source > 0).sum(1), (target > 0).sum(1))
    groups = np.searchsorted(BATCH_LENGTH_BOUNDARIES, lengths, side="right")
    rng = np.random.default_rng(seed)
    pending = collections.defaultdict(list)
    while True:
        for i in rng.permutation(len(source)):
            pending[groups[i]].append(i)
            if len(pending[groups[i]]) == batch_size:
                rows = np.array(pending.pop(groups[i]))
                used = int(lengths[rows].max())
                width = min(MAX_LENGTH, -(-used // LENGTH_MULTIPLE) * LENGTH_MULTIPLE)
                width = width if trim else MAX_LENGTH
                yield source[rows, :width], decoder[rows, :width], target[rows, :width]


def greedy(model, source: np.ndarray, batch: int = 2048) -> list:
    """Greedy translations (lists of ids, [END] excluded) of `source` rows."""
    from keras import ops

    from trainer_module.translator.config import END_ID, PAD_ID, START_ID

    out = []
    for start in range(0, len(source), batch):
        rows = source[start : start + batch]
        memory, mask, _ = model.encode(rows, training=False)
        cache = model.start_decoding(memory, mask, MAX_LENGTH)  # fixed shapes, for JAX
        ids = np.zeros((len(rows), MAX_LENGTH), "int32")
        ids[:, 0] = START_ID
        done = np.zeros(len(rows), bool)
        for t in range(MAX_LENGTH - 1):
            logits, cache = model.decode_step(ids[:, t : t + 1], t, cache, shift=True)
            scores = ops.convert_to_numpy(logits[:, 0, :]).astype("float32")
            scores[:, [PAD_ID, START_ID]] = -np.inf
            ids[:, t + 1] = np.where(done, PAD_ID, scores.argmax(-1))
            done |= ids[:, t + 1] == END_ID
            if done.all():
                break
        for row in ids[:, 1:]:
            ends = np.flatnonzero((row == END_ID) | (row == PAD_ID))
            out.append(row[: ends[0] if len(ends) else len(row)])
    return out


def bleu(model, source, references, vocabulary) -> dict:
    import sacrebleu

    hypotheses = [
        " ".join(vocabulary[i] for i in ids).replace(" ##", "") for ids in greedy(model, source)
    ]
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [list(references)]).score, 2),
        "bleu_lowercase": round(
            sacrebleu.corpus_bleu(hypotheses, [list(references)], lowercase=True).score, 2
        ),
    }


def run(name: str, overrides: dict, data, seed: int, emit=print) -> list:
    """Trains one recipe; a result per checkpoint and per average there, each also passed to
    `emit` as soon as it is known."""
    import keras

    from trainer_module.translator.config import DECODER_INPUT_IDS, PRESETS, SOURCE_IDS
    from trainer_module.translator.model import build_model

    overrides = dict(overrides)
    preset = overrides.pop("preset", "base")
    epochs = float(overrides.pop("epochs", 20))
    checkpoints = [int(c) for c in str(overrides.pop("checkpoints", int(epochs))).split("/")]
    average = int(overrides.pop("average", 5))
    config = PRESETS[preset].replace(**overrides)
    vocab = "joint" if config.shared_vocabulary else "separate"
    de_vocab, en_vocab = data[f"{vocab}_de_vocabulary"], data[f"{vocab}_en_vocabulary"]
    config = config.replace(
        source_vocab_size=len(de_vocab) - 4, target_vocab_size=len(en_vocab) - 4
    )
    train = model_arrays(data[f"{vocab}_train_de"], data[f"{vocab}_train_en"])
    scored = {
        split: (data[f"{vocab}_{split}_de"][:, :MAX_LENGTH].astype("int32"), data[f"{split}_en"])
        for split in ("selection", "val")
    }
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(seed)
    steps_per_epoch = len(train[0]) / config.batch_size
    train_steps = int(np.ceil(steps_per_epoch * epochs))
    model = build_model(config, train_steps)
    source, decoder, target = train
    trim = keras.backend.backend() == "tensorflow"
    stream = batches(source, decoder, target, config.batch_size, seed, trim=trim)
    recent: collections.deque = collections.deque(maxlen=average)
    results, started, step = [], time.perf_counter(), 0
    for epoch in range(1, int(np.ceil(epochs)) + 1):
        for _ in range(min(int(round(steps_per_epoch * epoch)), train_steps) - step):
            source, decoder, target = next(stream)
            logs = model.train_on_batch(
                {SOURCE_IDS: source, DECODER_INPUT_IDS: decoder}, target, return_dict=True
            )
            step += 1
        recent.append([np.array(w) for w in model.get_weights()])
        print(f"{name} epoch {epoch}: loss {logs['loss']:.4f}", flush=True)
        if epoch not in checkpoints:
            continue
        seconds = time.perf_counter() - started
        current = model.get_weights()
        for weights, label in ((current, "last"), (None, f"average of {len(recent)}")):
            if weights is None:
                model.set_weights([np.mean(ws, axis=0) for ws in zip(*recent)])
            result = {
                "recipe": name,
                "overrides": {"preset": preset, **overrides},
                "epochs": epoch,
                "weights": label,
                "parameters": model.count_params(),
                "train_seconds": round(seconds, 1),
                "sentences_per_second": round(step * config.batch_size / seconds, 1),
                "backend": keras.backend.backend(),
                **{
                    f"{split}_{key}": value
                    for split, (source, references) in scored.items()
                    for key, value in bleu(model, source, references, en_vocab).items()
                },
            }
            results.append(result)
            emit(result)
        model.set_weights(current)
        started = time.perf_counter() - seconds  # scoring is not training time
    return results


COLUMNS = [
    ("recipe", "recipe"),
    ("overrides", lambda r: " ".join(f"{k}={v}" for k, v in r["overrides"].items())),
    ("epochs", "epochs"),
    ("weights", "weights"),
    ("selection BLEU (lower-cased)", "selection_bleu_lowercase"),
    ("val BLEU cased", "val_bleu"),
    ("val BLEU lower-cased", "val_bleu_lowercase"),
    ("sentences/s", "sentences_per_second"),
    ("backend", "backend"),
]


def save(name: str, results: list) -> None:
    from benchmarks import report

    rows = [
        [column(r) if callable(column) else r.get(column) for _, column in COLUMNS] for r in results
    ]
    title = "Recipes by greedy BLEU on the selection split (chosen there; val is the pipeline's)"
    table = {"title": title, "columns": [c for c, _ in COLUMNS], "rows": rows}
    report.save("translation_recipes", name, {"tables": [table]})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--cache", default=CACHE, help="the ids, written by --prepare")
    parser.add_argument("--prepare", action="store_true", help="write --cache, then stop")
    parser.add_argument("--recipe", action="append", default=[], help="NAME[:FIELD=VALUE,...]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="a JSON-lines file to append the results to")
    parser.add_argument("--name", help="write benchmarks/results/translation_recipes/NAME.json")
    parser.add_argument("--results-from", metavar="JSONL", help="tabulate an earlier run's")
    args = parser.parse_args(argv)
    if args.prepare:
        prepare(args.data, args.cache)
        return
    if args.results_from:
        with open(args.results_from) as f:
            save(args.name, [json.loads(line) for line in f if line.strip()])
        return
    with np.load(args.cache, allow_pickle=True) as arrays:
        data = dict(arrays)

    results = []
    for text in args.recipe or ["base"]:
        name, overrides = parse_recipe(text)
        results += run(name, overrides, data, args.seed, emitter(args.output))
    if args.name:
        save(args.name, results)


if __name__ == "__main__":
    main()
