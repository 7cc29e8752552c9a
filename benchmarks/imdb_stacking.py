"""Benchmark: how far the text encoder's two paths go on IMDB, and what more of them adds.

    python -m benchmarks.imdb_stacking --name paths-and-combinations

The text encoder's recipe combines a from-scratch Transformer (the deep path) with NBSVM's
regression over word n-grams (the wide path), by a logistic regression on held-out reviews
(trainer_module/training/wide_path.py). This measures, on imdb_recipes.py's splits of the
labelled reviews (train, selection, and the pipeline's validation split, val):

1. **The n-gram model**, by 5-fold cross-validation over the pipeline's whole training split
   (train + selection, 19,963 reviews: a standard error near 0.2 points, against 0.4 on val's
   5,037), and on val after training on all of it: NBSVM as published (binarized word uni-,
   bi- and trigrams scaled by naive-Bayes log-count ratios, a linear SVM, C 0.1); the same
   features in a logistic regression, which is the wide path's model (C 1); each review's
   features scaled to unit length (C 100); word 1- to 4-grams; character 2- to 5-grams within
   words. scikit-learn, every n-gram seen in training (the pipeline hashes them into 2^22
   buckets).
2. **Combinations**, fitted as the pipeline fits its paths': each path trained on train, the
   logistic regression of selection's labels on their logits, scored on val. Paths: the word
   and character n-gram models above; the text encoder's deep path alone (preset `small`
   without the wide path, two seeds; the same with word dropout); and a deep path trained on
   the residual of the word model, whose out-of-fold logit on each training review is a fixed
   offset to the deep path's during training (boosting, rather than training the two apart).

Float32, the deep path's steps as the pipeline's (2 epochs at batch 32).
"""

import argparse
import os
import time

import numpy as np

from benchmarks import imdb_recipes, report

FOLDS = 5


def word_grams(order: int):
    def grams(tokens):
        out = list(tokens)
        for n in range(2, order + 1):
            out += [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
        return out

    return grams


def features(kind: str, fit_texts: list, other_texts: list):
    """'wordN' or 'charA-B' -> (binary features of fit_texts, of other_texts), the vocabulary
    every n-gram of fit_texts."""
    from sklearn.feature_extraction.text import CountVectorizer

    if kind.startswith("word"):
        vectorizer = CountVectorizer(
            analyzer=word_grams(int(kind[4:])), binary=True, dtype=np.float32
        )
    else:
        low, high = map(int, kind[4:].split("-"))
        vectorizer = CountVectorizer(
            analyzer="char_wb", ngram_range=(low, high), binary=True, dtype=np.float32
        )
        fit_texts = [" ".join(t) for t in fit_texts]
        other_texts = [" ".join(t) for t in other_texts]
    return vectorizer.fit_transform(fit_texts), vectorizer.transform(other_texts)


def nb_scaled(fit, labels, *others, unit_length=False):
    """Features scaled by the naive-Bayes log-count ratios of `fit` (smoothing 1, as
    preprocessing/ngrams.py's), optionally each row to unit length."""
    from scipy.sparse import diags
    from sklearn.preprocessing import normalize

    positive = 1 + np.asarray(fit[labels == 1].sum(0)).ravel()
    negative = 1 + np.asarray(fit[labels == 0].sum(0)).ravel()
    ratios = diags(np.log(positive / positive.sum()) - np.log(negative / negative.sum()))
    scaled = [m @ ratios for m in (fit, *others)]
    return [normalize(m) for m in scaled] if unit_length else scaled


def classifier(model: str, c: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    if model == "svm":
        return LinearSVC(C=c, max_iter=5000)
    return LogisticRegression(C=c, max_iter=3000, solver="liblinear")


# (label, features, classifier, C, rows scaled to unit length)
NGRAM_MODELS = [
    ("NBSVM as published: word 1-3-grams, SVM", "word3", "svm", 0.1, False),
    ("the wide path's model: word 1-3-grams, logistic", "word3", "logistic", 1.0, False),
    ("word 1-3-grams, unit-length rows", "word3", "logistic", 100.0, True),
    ("word 1-4-grams, unit-length rows", "word4", "logistic", 100.0, True),
    ("character 2-5-grams, logistic", "char2-5", "logistic", 1.0, False),
]


def out_of_fold(fit, labels, folds, model="logistic", c=1.0, unit_length=False) -> np.ndarray:
    """Each review's score from the n-gram model trained (ratios included) on the other folds."""
    scores = np.zeros(len(labels))
    for fold in range(FOLDS):
        inside, outside = folds != fold, folds == fold
        a, b = nb_scaled(fit[inside], labels[inside], fit[outside], unit_length=unit_length)
        scores[outside] = classifier(model, c).fit(a, labels[inside]).decision_function(b)
    return scores


def cross_validate(data: dict) -> list:
    """NGRAM_MODELS by FOLDS-fold cross-validation over train + selection, and on val."""
    tokens = data["train"][0] + data["selection"][0]
    labels = np.concatenate([data["train"][1], data["selection"][1]])
    val_tokens, val_labels = data["val"]
    folds = np.random.default_rng(0).permutation(len(labels)) % FOLDS
    rows, cached = [], {}
    for label, kind, model, c, unit in NGRAM_MODELS:
        started = time.perf_counter()
        if kind not in cached:
            cached = {kind: features(kind, tokens, val_tokens)}
        fit, val = cached[kind]
        correct = int(((out_of_fold(fit, labels, folds, model, c, unit) > 0) == labels).sum())
        a, b = nb_scaled(fit, labels, val, unit_length=unit)
        scores = classifier(model, c).fit(a, labels).decision_function(b)
        rows.append(
            [
                label,
                fit.shape[1],
                round(correct / len(labels), 4),
                round(float(((scores > 0) == val_labels).mean()), 4),
                round(time.perf_counter() - started),
            ]
        )
        print(rows[-1], flush=True)
    return rows


def ngram_logits(data: dict, kind: str, with_train: bool = False) -> dict:
    """The logistic n-gram model trained on train: its logits on selection and val, and with
    `with_train` its out-of-fold logits on train."""
    train_tokens, labels = data["train"]
    others = data["selection"][0] + data["val"][0]
    fit, other = features(kind, train_tokens, others)
    a, b = nb_scaled(fit, labels, other)
    scores = classifier("logistic", 1.0).fit(a, labels).decision_function(b)
    split = len(data["selection"][0])
    logits = {"selection": scores[:split], "val": scores[split:]}
    if with_train:
        folds = np.random.default_rng(1).permutation(len(labels)) % FOLDS
        logits["train"] = out_of_fold(fit, labels, folds)
    return logits


def deep_logits(data: dict, seed: int, offset=None, **overrides) -> dict:
    """The text encoder's deep path (preset small, no wide path) trained on train for the
    pipeline's steps; with `offset` (one logit per training review), trained on the residual:
    its logit plus the offset meets the loss. Its logits on selection and val."""
    import keras
    from keras import ops

    from trainer_module.text_encoder.config import PRESETS
    from trainer_module.text_encoder.model import build_model

    config = PRESETS["small"].replace(ngram_buckets=0, **overrides)
    encoded, kept = imdb_recipes.encode(data, config)
    config = config.replace(vocab_size=kept)
    keras.utils.set_random_seed(seed)
    steps = round(2 * imdb_recipes.PIPELINE_TRAIN_REVIEWS / config.batch_size)
    deep = build_model(config, steps)
    x, y = encoded["train"]
    trained = deep
    if offset is not None:
        tokens = keras.Input((config.max_length,), dtype="int32", name="tokens")
        shift = keras.Input((), dtype="float32", name="offset")
        logits = keras.layers.Lambda(lambda a: a[0] + ops.stack([-a[1] / 2, a[1] / 2], -1))(
            [deep(tokens), shift]
        )
        trained = keras.Model({"tokens": tokens, "offset": shift}, logits)
        trained.compile(deep.optimizer, keras.losses.CategoricalCrossentropy(from_logits=True))
        x = {"tokens": x, "offset": offset}
    batches = imdb_recipes.shuffled_batches(x, y, config.batch_size, np.random.default_rng(seed))
    started = time.perf_counter()
    trained.fit(batches, steps_per_epoch=steps, epochs=1, verbose=0)
    print(f"deep path trained in {time.perf_counter() - started:.0f} s", flush=True)
    out = {}
    for split in ("selection", "val"):
        p = deep.predict(encoded[split][0], batch_size=500, verbose=0).astype("float64")
        out[split] = p[:, 1] - p[:, 0]
    return out


def subsets(names: list) -> list:
    """Each path alone, the first with each other, the first two with each other, all."""
    first, second, rest = names[0], names[1], names[2:]
    return (
        [(n,) for n in names]
        + [(first, n) for n in names[1:]]
        + [(first, second, n) for n in rest]
        + [tuple(names)]
    )


def combinations(data: dict, paths: dict, names: list) -> list:
    """For each of `subsets(names)`: val accuracy of the logistic regression of selection's
    labels on the paths' logits (as training/wide_path.py fits it), and its weights."""
    from sklearn.linear_model import LogisticRegression

    selection_labels, val_labels = data["selection"][1], data["val"][1]
    rows = []
    for subset in subsets(names):
        s = np.stack([paths[n]["selection"] for n in subset], 1)
        v = np.stack([paths[n]["val"] for n in subset], 1)
        model = LogisticRegression(C=1.0).fit(s, selection_labels)
        accuracy = float(((model.decision_function(v) > 0) == val_labels).mean())
        weights = " / ".join(f"{w:.2f}" for w in model.coef_[0])
        rows.append([" + ".join(subset), round(accuracy, 4), weights])
        print(rows[-1], flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        default=os.path.join(
            imdb_recipes.REPO, "..", "shared", "data", "imdb", "aclImdb_train.tar.gz"
        ),
    )
    parser.add_argument("--cache", default="/tmp/imdb_recipes.pickle")
    parser.add_argument("--skip-cross-validation", action="store_true")
    parser.add_argument("--name", help="write benchmarks/results/imdb_stacking/NAME.json")
    args = parser.parse_args(argv)
    data = imdb_recipes.load(args.data, args.cache)
    started = time.perf_counter()
    tables = []
    if not args.skip_cross_validation:
        tables.append(
            {
                "title": f"The n-gram model alone: {FOLDS}-fold cross-validation over the "
                "pipeline's training split, and val after training on all of it",
                "columns": ["model", "features", "cross-validation", "val", "seconds"],
                "rows": cross_validate(data),
            }
        )
    word = ngram_logits(data, "word3", with_train=True)
    paths = {
        "word n-grams": word,
        "deep": deep_logits(data, seed=0),
        "character n-grams": ngram_logits(data, "char2-5"),
        "deep, seed 1": deep_logits(data, seed=1),
        "deep, word dropout 0.2": deep_logits(data, seed=0, token_dropout=0.2),
        "deep on the residual": deep_logits(data, seed=0, offset=word["train"].astype("float32")),
    }
    rows = combinations(data, paths, list(paths))
    tables.append(
        {
            "title": "Paths trained on train, combined by a logistic regression on selection "
            "(1,942 reviews), scored on val (5,037)",
            "columns": ["paths", "val", "weights"],
            "rows": rows,
        }
    )
    if args.name:
        measured = {"seconds": round(time.perf_counter() - started)}
        report.save("imdb_stacking", args.name, {"measured": measured, "tables": tables})


if __name__ == "__main__":
    main()
