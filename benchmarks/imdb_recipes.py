"""Benchmark: IMDB training recipes for the text encoder, under any Keras backend.

    KERAS_BACKEND=jax python -m benchmarks.imdb_recipes --data aclImdb_train.tar.gz \\
        --recipe small --recipe linear:decay=linear

The pipeline's budget (`imdb_pipeline.py`: the whole pipeline in at most 5 minutes on 2 cores)
allows one recipe per run; on a GPU (JAX) this trains many at the pipeline's step count at once,
to choose which one the CPU run is spent on. A recipe is `NAME[:FIELD=VALUE,...]`: preset
`small` with TextEncoderConfig fields replaced (`epochs=E` replaces --epochs for that recipe).

Data: the tarball's 25,000 labelled training reviews, split as ReviewsExampleGen splits them
(seeded hash of `train/<pos|neg>/<id>`, seed 42, 20% validation). The recipe is chosen on a
*selection* split carved out of the pipeline's training split by another seeded hash (seed 7,
10%), so that the pipeline's validation accuracy is not what picks it; both are printed.
Tokens as the transform graph makes them (`trainer_module/preprocessing/text.py`: lower case,
`<br />` removed, punctuation and symbols split off, whitespace), the `vocab_size` most
frequent training words, head-and-tail truncation (`encode`); the model and its compile are
the trainer's (`trainer_module/text_encoder/model.py: build_model`), under `mixed_bfloat16` as
on this CPU. Steps: epochs x the pipeline's 19,963 training reviews / batch size. The encoder
trains alone (the recipe's `ngram_buckets` is set to 0): the pipeline trains the wide path
apart, after it (trainer_module/training/wide_path.py), and `--anchor` and
benchmarks/imdb_stacking.py measure that path and the combination.

`--anchor` also fits the classic non-neural anchor, NBSVM (Wang and Manning, 2012: binarized
word uni-, bi- and trigrams scaled by their naive-Bayes log-count ratios, a linear SVM, C 0.1;
scikit-learn, no backend), on the pipeline's whole training split, and scores it on the
pipeline's validation split, beside which the pipeline's wide path alone is measured.

Writes one JSON line per recipe to stdout and `--output`.
"""

import collections
import os
import pickle
import tarfile
import time

import numpy as np

from benchmarks import recipes
from benchmarks.recipes import bucket, member_bytes

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PIPELINE_TRAIN_REVIEWS = 19_963


def tokenize(text: str) -> list:
    """trainer_module/preprocessing/text.py's tokens, in Python (`regex` has \\p classes)."""
    import regex

    text = regex.sub(r"<br\s*/?>", " ", text.lower())
    return regex.sub(r"([\p{P}\p{S}])", r" \1 ", text).split()


def load(tarball: str, cache: str):
    """{split: (token lists, labels (N,))} for train, selection and val."""
    if os.path.exists(cache):
        with open(cache, "rb") as f:
            return pickle.load(f)
    parts: dict[str, tuple[list, list]] = {
        "train": ([], []),
        "selection": ([], []),
        "val": ([], []),
    }
    with tarfile.open(tarball) as archive:
        for member in archive:
            name = member.name
            if not (
                member.isfile() and name.endswith(".txt") and ("/pos/" in name or "/neg/" in name)
            ):
                continue
            review_id = name[name.index("train/") : -len(".txt")]
            split = (
                "val"
                if bucket(review_id, 42) >= 80
                else "selection"
                if bucket(review_id, 7) < 10
                else "train"
            )
            text = member_bytes(archive, member).decode("utf-8")
            parts[split][0].append(tokenize(text))
            parts[split][1].append(int("/pos/" in name))
    data = {
        split: (tokens, np.asarray(labels, np.int32)) for split, (tokens, labels) in parts.items()
    }
    with open(cache, "wb") as f:
        pickle.dump(data, f)
    return data


def encode(data: dict, config):
    """Token lists -> ({split: (token ids, labels)}, the number of words kept), ids as the
    transform graph writes them: 0 pads, 1 + rank for the vocab_size most frequent training
    words, 1 + vocab_size for the rest, head-and-tail truncated."""
    counts = collections.Counter(t for tokens in data["train"][0] for t in tokens)
    vocabulary = {w: i + 1 for i, (w, _) in enumerate(counts.most_common(config.vocab_size))}
    oov, head = len(vocabulary) + 1, config.truncation_head
    tail = config.max_length - head
    encoded = {}
    for split, (reviews, labels) in data.items():
        ids = np.zeros((len(reviews), config.max_length), np.int32)
        for row, tokens in enumerate(reviews):
            if len(tokens) > config.max_length:
                tokens = tokens[:head] + (tokens[-tail:] if tail else [])
            ids[row, : len(tokens)] = [vocabulary.get(t, oov) for t in tokens]
        encoded[split] = (ids, labels)
    return encoded, len(vocabulary)


def rows(inputs, index):
    return (
        {key: value[index] for key, value in inputs.items()}
        if isinstance(inputs, dict)
        else inputs[index]
    )


def shuffled_batches(inputs, labels, batch_size: int, rng):
    """Endless (rows of `inputs`, one-hot labels) batches, in a new order on every pass."""
    while True:
        order = rng.permutation(len(labels))
        for start in range(0, len(order) - batch_size + 1, batch_size):
            index = order[start : start + batch_size]
            yield rows(inputs, index), np.eye(2, dtype="float32")[labels[index]]


def run(name: str, overrides: dict, data: dict, epochs: float, seed: int) -> dict:
    import keras

    from trainer_module.text_encoder.config import PRESETS
    from trainer_module.text_encoder.model import build_model

    epochs = float(overrides.pop("epochs", epochs))
    config = PRESETS["small"].replace(**{"ngram_buckets": 0, **overrides})
    if config.ngram_buckets:
        raise ValueError(
            "imdb_recipes trains the encoder alone; the wide path trains in the pipeline "
            "(measure it with --anchor or benchmarks/imdb_stacking.py)"
        )
    encoded, kept = encode(data, config)
    config = config.replace(vocab_size=kept)
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(seed)
    steps = round(epochs * PIPELINE_TRAIN_REVIEWS / config.batch_size)
    model = build_model(config, steps)
    x, y = encoded["train"]
    selection_x, selection_y = encoded["selection"]
    pretrained = pretrain(model, np.concatenate([x, selection_x]), seed)
    started = time.perf_counter()
    history = model.fit(
        shuffled_batches(x, y, config.batch_size, np.random.default_rng(seed)),
        steps_per_epoch=steps // config.evaluations,
        epochs=config.evaluations,
        verbose=0,
        validation_data=(selection_x, np.eye(2, dtype="float32")[selection_y]),
    )
    seconds = time.perf_counter() - started

    def accuracy(split):
        inputs, labels = encoded[split]
        return round(
            float((model.predict(inputs, batch_size=500, verbose=0).argmax(-1) == labels).mean()), 4
        )

    return {
        "recipe": name,
        "overrides": overrides,
        "epochs": epochs,
        "steps": steps,
        "parameters": model.count_params(),
        "selection_accuracy": accuracy("selection"),
        "val_accuracy": accuracy("val"),
        "selection_accuracy_by_quarter": [round(a, 4) for a in history.history["val_accuracy"]],
        "selection_loss_by_quarter": [round(a, 4) for a in history.history["val_loss"]],
        "fit_seconds": round(seconds, 1),
        "pretraining": pretrained,
        "backend": keras.backend.backend(),
        "seed": seed,
    }


def pretrain(model, texts, seed: int):
    """Masked-token pretraining of the model's encoder on `texts` (the pipeline's whole
    training split, unlabelled), as the Trainer runs it, when the recipe asks for it; what
    history.json would record, or None."""
    import tensorflow as tf

    from trainer_module.text_encoder.model import pretraining
    from trainer_module.training.pretraining import pretrain as run_pretraining
    from trainer_module.training.pretraining import steps_for

    config = model.config
    if not config.pretrain_epochs:
        return None

    def token_batches():
        return (
            tf.data.Dataset.from_tensor_slices(texts.astype("int64"))
            .shuffle(len(texts), seed=seed)
            .repeat()
            .batch(config.batch_size, drop_remainder=True)
        )

    steps = steps_for(config.pretrain_epochs, len(texts), config.batch_size)
    return run_pretraining(
        pretraining(model, token_batches),
        steps,
        config.batch_size,
        config.pretrain_learning_rate,
        config.weight_decay,
    )


def ngram_anchor(data: dict, c: float = 0.1) -> dict:
    """Also fit NBSVM (Wang and Manning, 2012) on the pipeline's training split (scikit-learn).

    Binarized word uni-, bi- and trigrams (every one seen in training), scaled by their
    naive-Bayes log-count ratios (smoothing 1), then an L2-regularised linear SVM with the
    squared hinge loss (C 0.1), as the issue's anchor: 0.917 on IMDB's test reviews. Trained
    on the pipeline's whole training split (this benchmark's train and selection splits), so
    that its validation accuracy compares with the pipeline's. Returns it."""
    from scipy.sparse import diags
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.svm import LinearSVC

    def grams(t):
        return (
            t
            + [f"{a} {b}" for a, b in zip(t, t[1:])]
            + [f"{a} {b} {c}" for a, b, c in zip(t, t[1:], t[2:])]
        )

    started = time.perf_counter()
    tokens = data["train"][0] + data["selection"][0]
    labels = np.concatenate([data["train"][1], data["selection"][1]])
    vectorizer = CountVectorizer(analyzer=grams, binary=True, dtype=np.float32)
    features = vectorizer.fit_transform(tokens)
    positive = 1 + np.asarray(features[labels == 1].sum(0)).ravel()
    negative = 1 + np.asarray(features[labels == 0].sum(0)).ravel()
    ratios = diags(np.log(positive / positive.sum()) - np.log(negative / negative.sum()))
    model = LinearSVC(C=c, loss="squared_hinge", max_iter=5000)
    model.fit(features @ ratios, labels)
    val_tokens, val_labels = data["val"]
    accuracy = model.score(vectorizer.transform(val_tokens) @ ratios, val_labels)
    return {
        "recipe": "ngram_anchor",
        "anchor": "NBSVM, binarized uni-, bi- and trigrams, linear SVM",
        "features": features.shape[1],
        "C": c,
        "train_reviews": len(labels),
        "val_accuracy": round(float(accuracy), 4),
        "fit_seconds": round(time.perf_counter() - started, 1),
    }


def pretraining_cell(result: dict) -> str:
    """A recipe's pretraining, as the results table shows it ("" without)."""
    record = result.get("pretraining")
    if not record:
        return ""
    return f"{record['steps']}, {record['seconds'] / 60:.1f}, {record.get('last_accuracy')}"


def main(argv=None) -> None:
    recipes.main(
        __doc__,
        data=os.path.join(REPO, "..", "shared", "data", "imdb", "aclImdb_train.tar.gz"),
        cache="/tmp/imdb_recipes.pickle",
        epochs=2,
        recipe="small",
        load=load,
        run=run,
        anchor=ngram_anchor,
        columns=(("pretraining: steps, minutes, last accuracy", pretraining_cell),),
        argv=argv,
    )


if __name__ == "__main__":
    main()
