"""How a text classifier's two paths train (layers/ngram.py: WideAndDeep): the deep path on the
training reviews less a held-out slice; the wide path (NBSVM's regression) alone on the same
reviews, to convergence; then the combination of their logits, fitted on the held-out slice that
neither path trained on, so that the served probabilities stay calibrated. Above two classes
the wide path is one regression per class against the rest, and the combination a softmax
regression on both paths' logits (`softmax_regression`).

The slice is chosen by a hash of each review's first n-gram ids (preprocessing/ngrams.py:
`held_out`; the same review always lands on the same side, whatever the order of the files),
`holdout_percent` of the training split; Transform's naive-Bayes counts leave it out too.
"""

import dataclasses
import math
import time
from typing import Any, Callable, ClassVar, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from trainer_module import features
from trainer_module.layers.ngram import NgramLogit, classifier_of
from trainer_module.preprocessing.classes import recorded_class_names
from trainer_module.preprocessing.ngrams import held_out, ngram_ratios
from trainer_module.training.inputs import Prepared, feature_batches, make_dataset
from trainer_module.training.progress import Progress

# Fewer held-out reviews than this fit no combination: the paths' logits are summed.
MIN_HOLDOUT = 100
# Plain SGD needs more passes over a small training split to converge than over IMDB's 20,000
# reviews: the wide path trains for at least this many steps (a second or two).
MIN_STEPS = 200


def batches(run, tf_transform_output, model_inputs, config, shuffle, epochs=None, files=None):
    """Batches of (model_inputs(features), one-hot labels) of `files` (default: the training
    split), shuffled and repeated (`shuffle`), or `epochs` passes."""
    return make_dataset(
        run,
        run.train_files if files is None else files,
        tf_transform_output,
        model_inputs,
        config.batch_size,
        config.num_classes,
        shuffle,
        epochs,
    )


@dataclasses.dataclass(frozen=True)
class TextClassifierPrepared(Prepared):
    """What both text families prepare (`create`): the deep path's training batches leave out
    the slice the combination is fitted on when the config holds one out (holds_out); with an
    n-gram path, Transform's ratios, and after the deep path's fit the wide path's training and
    the combination (`after_fit`: train_and_combine)."""

    model_inputs: Callable[[dict], Any]  # Transform's features -> the model's inputs
    ngram_ratios: Optional[np.ndarray]  # the wide path's (preprocessing/ngrams.py), or None
    class_names: Sequence[str]  # by label: Transform's (text_classes), the export's names

    token_ids: ClassVar[str]  # the family's transformed token ids, which pretraining reads

    @classmethod
    def create(cls, run, config, tf_transform_output, model_inputs, **fields):
        train = batches(run, tf_transform_output, model_inputs, config, True)
        evaluation = batches(
            run, tf_transform_output, model_inputs, config, False, files=run.eval_files
        )
        ratios = ngram_ratios(tf_transform_output) if config.ngram_buckets else None
        names = text_classes(tf_transform_output, config.num_classes)
        if holds_out(config, run.train_examples):
            # The deep path trains outside the held-out slice.
            train = split(train, config.holdout_percent, config.batch_size, holdout=False)
        return cls(
            run=run,
            config=config,
            tf_transform_output=tf_transform_output,
            train=train,
            evaluation=evaluation,
            model_inputs=model_inputs,
            ngram_ratios=ratios,
            class_names=names,
            **fields,
        )

    def describe(self, model) -> dict:
        return {"class_names": list(self.class_names)}

    def served(self, model):
        return classifier_of(model)

    @property
    def pretrain_epochs(self) -> float:
        return self.config.pretrain_epochs  # both text families' configs are PretrainingConfig

    def pretraining_batches(self) -> tf.data.Dataset:
        """Pretraining's input: endless batches of the transformed token ids of the training
        split and of the unlabelled texts (when the data has them), labels unread; validation
        texts never enter it."""
        return feature_batches(
            self.run,
            [*self.run.train_files, *self.run.unlabeled_files],
            self.tf_transform_output,
            self.token_ids,
            self.config.batch_size,
        )

    def datasets(self, shuffle: bool, epochs: Optional[int] = None, files=None):
        """Batches of the training split (`files`: others), unsplit (`batches`)."""
        return batches(
            self.run,
            self.tf_transform_output,
            self.model_inputs,
            self.config,
            shuffle,
            epochs,
            files,
        )

    def after_fit(self, model, run) -> dict:
        if self.ngram_ratios is None:  # no n-gram path (create reads them when there is one)
            return {}
        return train_and_combine(
            model,
            self.config,
            self.datasets,
            self.evaluation,
            run.eval_steps,
            run.train_examples,
            self.ngram_ratios,
        )


def text_classes(tf_transform_output, num_classes: int) -> Sequence[str]:
    """The class names Transform recorded (IMDB's when it recorded none); raises when their
    number is not the config's `num_classes`, which the pipeline set from the data when it
    was built (its EvalConfig and the n-gram path depend on it)."""
    names = recorded_class_names(tf_transform_output) or list(features.LABEL_NAMES)
    if len(names) != num_classes:
        raise ValueError(
            f"the training data holds {len(names)} classes {names}, the model was configured "
            f"for num_classes={num_classes}: build the pipeline again from this data (run or "
            "compile reads its classes), or give --set num_classes to match"
        )
    return names


def holds_out(config, train_examples: int) -> bool:
    """Whether the training split is large enough for a held-out slice of MIN_HOLDOUT reviews
    or more; on a smaller one, both paths train on every review and their logits are summed."""
    return bool(config.ngram_buckets) and (
        train_examples * config.holdout_percent / 100 >= MIN_HOLDOUT
    )


def split(dataset: tf.data.Dataset, percent: int, batch_size: int, holdout: bool):
    """Batches of (inputs, labels) -> the same re-batched, kept to the held-out slice
    (`holdout`) or to the rest."""
    rows = dataset.unbatch()
    if holdout:
        rows = rows.filter(lambda x, y: held_out(x["ngram_ids"], percent))
    else:
        rows = rows.filter(lambda x, y: tf.logical_not(held_out(x["ngram_ids"], percent)))
    return rows.batch(batch_size, drop_remainder=not holdout).prefetch(tf.data.AUTOTUNE)


class WidePathModel(keras.Model):
    """The wide path alone: n-gram ids -> its (B,) logit, or (B, C) one-vs-rest logits (the
    classifier's own layer)."""

    def __init__(self, ngram_logit, **kwargs):
        super().__init__(**kwargs)
        self.ngram_logit = ngram_logit

    def call(self, ngram_ids):
        return self.ngram_logit(ngram_ids)


def fit_wide_path(model, train: tf.data.Dataset, steps: int, config, ratios: np.ndarray) -> dict:
    """Trains the wide path alone from zero, with Transform's `ratios`: plain SGD at
    config.ngram_learning_rate, cosine-decayed to zero over `steps` batches of `train`, on the
    logistic loss (above two classes, each class's regression on its own against the rest, as
    one-vs-rest NBSVM); then sets `model.ngram_logit` (frozen) to the result. A fresh layer
    trains (the model's was built frozen, and TensorFlow fixes a variable's trainability when
    it is made). Returns its last training loss and accuracy."""
    ngram_logit = classifier_of(model).ngram_logit
    classes = ngram_logit.classes
    fresh = NgramLogit(ngram_logit.buckets, classes, name="ngram_logit")
    wide = WidePathModel(fresh)
    wide(np.zeros((1, 1), "int64"))  # build
    fresh.set_ratios(ratios)
    wide.compile(
        optimizer=keras.optimizers.SGD(
            keras.optimizers.schedules.CosineDecay(config.ngram_learning_rate, steps)
        ),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[
            keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)
            if classes == 2
            else keras.metrics.CategoricalAccuracy(name="accuracy")
        ],
    )
    result = wide.fit(
        train.map(lambda x, y: (x["ngram_ids"], y[:, 1] if classes == 2 else y)),
        steps_per_epoch=steps,
        epochs=1,
        verbose=0,
        callbacks=[Progress("wide path", steps, config.batch_size)],
    )
    ngram_logit.set_ratios(ratios)  # Transform's, whatever a warm start loaded
    ngram_logit.coefficients.assign(fresh.coefficients)
    ngram_logit.bias.assign(fresh.bias)
    return {key: round(float(values[-1]), 4) for key, values in result.history.items()}


def logistic_regression(
    features: np.ndarray, labels: np.ndarray, prior: np.ndarray, l2: float = 1.0
) -> np.ndarray:
    """(N, K) features, (N,) 0/1 labels -> (K + 1,) weights and intercept of the logistic
    regression, by Newton's method with a backtracking line search, with an L2 penalty (`l2`)
    pulling the K weights toward `prior` and the intercept toward 0 (which keeps a few
    separable examples from sending them to infinity). Its mean prediction equals the labels'
    mean at the optimum, but for the penalty's pull on the intercept (l2 against the number
    of examples: nothing on thousands)."""
    x = np.concatenate([features, np.ones((len(features), 1))], axis=1).astype("float64")
    signs = 2.0 * labels.astype("float64") - 1.0
    center = np.append(np.asarray(prior, "float64"), 0.0)
    penalty = np.diag([l2] * (features.shape[1] + 1))

    def objective(w):
        return np.logaddexp(0.0, -signs * (x @ w)).sum() + 0.5 * (w - center) @ penalty @ (
            w - center
        )

    w = center.copy()
    for _ in range(100):
        p = 0.5 * (1.0 + np.tanh(0.5 * (x @ w)))  # the sigmoid, without overflow
        gradient = x.T @ (p - (signs + 1) / 2) + penalty @ (w - center)
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty + 1e-9 * np.eye(len(w))
        step, size, current = np.linalg.solve(hessian, gradient), 1.0, objective(w)
        while objective(w - size * step) > current - 1e-4 * size * gradient @ step:
            size /= 2
            if size < 1e-10:
                return w
        w = w - size * step
        if np.abs(size * step).max() < 1e-9:
            break
    return w


def softmax_regression(
    deep: np.ndarray, wide: np.ndarray, labels: np.ndarray, l2: float = 1.0
) -> np.ndarray:
    """(N, C) deep logits, (N, C) wide logits, (N,) class ids -> the weighting (a, b, c_1 ...
    c_C) of logits a * deep + b * wide + c under the softmax cross-entropy, a and b at least 0
    (a path that counts against its evidence is left out), with the same L2 pull toward
    (1, 1, 0 ...) as the binary regression's (L-BFGS-B, scipy)."""
    from scipy.optimize import minimize

    classes = deep.shape[1]
    onehot = np.eye(classes)[labels]
    center = np.array([1.0, 1.0] + [0.0] * classes)

    def objective(w):
        logits = w[0] * deep + w[1] * wide + w[2:]
        logits = logits - logits.max(axis=1, keepdims=True)
        log_p = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        residual = np.exp(log_p) - onehot  # d loss / d logits
        gradient = np.concatenate(
            [[(residual * deep).sum()], [(residual * wide).sum()], residual.sum(axis=0)]
        ) + l2 * (w - center)
        return -(onehot * log_p).sum() + 0.5 * l2 * ((w - center) ** 2).sum(), gradient

    bounds = [(0.0, None), (0.0, None)] + [(None, None)] * classes
    return minimize(objective, center, jac=True, method="L-BFGS-B", bounds=bounds).x


def fit_combination(model, holdout: tf.data.Dataset) -> dict:
    """Sets `model.combination` to the logistic regression of the held-out reviews' labels on
    the deep path's evidence and the wide path's logit (a path whose weight comes out negative
    is left out; with fewer than MIN_HOLDOUT reviews the weights stay (1, 1, 0), the sum).
    Above two classes, the softmax regression on both paths' logits (softmax_regression).
    Returns the weights, the slice's size and its mean label and prediction (above two
    classes, the slice's accuracy before and after the fit). `model`: the classifier's
    PathTraining (layers/ngram.py)."""
    combination = classifier_of(model).combination
    deep, wide, labels = [], [], []
    for inputs, y in holdout:
        paths = keras.ops.convert_to_numpy(model.predict_on_batch(inputs))  # (B, 3, C)
        deep.append(paths[:, 1])
        wide.append(paths[:, 2])
        labels.append(np.asarray(y).argmax(axis=1))
    count = sum(len(batch) for batch in labels)
    if count < MIN_HOLDOUT:
        logging.info(
            "%d held-out reviews, fewer than %d: the paths' logits are summed as they are",
            count,
            MIN_HOLDOUT,
        )
        combination.weighting.assign(combination.summed)  # whatever a warm start loaded
        return {"holdout_examples": count, "weights": combination.summed}
    deep, wide, labels = np.concatenate(deep), np.concatenate(wide), np.concatenate(labels)
    if combination.classes != 2:
        weights = softmax_regression(deep, wide, labels)
        combination.weighting.assign(weights.astype("float32"))
        combined = weights[0] * deep + weights[1] * wide + weights[2:]
        return {
            "holdout_examples": int(len(labels)),
            "weights": [round(float(w), 4) for w in weights],  # deep, wide, the intercepts
            "holdout_summed_accuracy": round(float(((deep + wide).argmax(1) == labels).mean()), 4),
            "holdout_accuracy": round(float((combined.argmax(1) == labels).mean()), 4),
        }
    features = np.stack([deep[:, 1] - deep[:, 0], wide[:, 1] - wide[:, 0]], axis=1)
    weights = logistic_regression(features, labels, prior=np.ones(2))
    keep = weights[:2] > 0
    if keep.any() and not keep.all():  # a path that counts against its evidence: left out
        weights = np.zeros(3)
        weights[np.append(keep, True)] = logistic_regression(
            features[:, keep], labels, prior=np.ones(int(keep.sum()))
        )
    combination.weighting.assign(weights.astype("float32"))
    predictions = 0.5 * (1.0 + np.tanh(0.5 * (features @ weights[:2] + weights[2])))
    return {
        "holdout_examples": int(len(labels)),
        "weights": [round(float(w), 4) for w in weights],  # deep, wide, intercept
        "holdout_mean_label": round(float(labels.mean()), 4),
        "holdout_mean_prediction": round(float(predictions.mean()), 4),
    }


def train_and_combine(
    model,
    config,
    datasets: Callable[[bool, Optional[int]], tf.data.Dataset],
    evaluation: tf.data.Dataset,
    eval_steps: int,
    train_examples: int,
    ratios: np.ndarray,
) -> dict:
    """After the deep path trained: the wide path (fit_wide_path, config.ngram_epochs over the
    training reviews outside the held-out slice), the combination (fit_combination), then the
    wide path trained again the same way on every training review (the held-out ones too: a
    tenth more data, with the combination's weights kept), and each path's and the
    combination's validation metrics after that refit. `datasets(shuffle, epochs)`
    gives batches of the training split (epochs None: repeated). Returns what history.json
    records. `model`: the classifier's PathTraining (layers/ngram.py)."""
    started, percent = time.perf_counter(), config.holdout_percent
    combiner = classifier_of(model).combination

    def steps_over(examples):
        return max(MIN_STEPS, math.ceil(config.ngram_epochs * examples / config.batch_size))

    def validate():
        metrics = model.evaluate(evaluation, steps=max(1, eval_steps), verbose=0, return_dict=True)
        return {
            key: round(float(metrics[key]), 4)
            for key in ("accuracy", "deep_accuracy", "wide_accuracy")
            if key in metrics
        }

    trained, combination = None, None
    if holds_out(config, train_examples):
        steps = steps_over(max(1, round(train_examples * (100 - percent) / 100)))
        logging.info("Wide path: %d steps of SGD outside the held-out slice", steps)
        trained = fit_wide_path(
            model,
            split(datasets(True, None), percent, config.batch_size, False),
            steps,
            config,
            ratios,
        )
        combination = fit_combination(
            model, split(datasets(False, 1), percent, config.batch_size, True)
        )
        logging.info("Paths combined on held-out reviews: %s", combination)
    else:
        logging.info(
            "%d training reviews: no held-out slice of %d or more, the paths' logits are summed",
            train_examples,
            MIN_HOLDOUT,
        )
        combiner.weighting.assign(combiner.summed)  # whatever a warm start loaded
        steps, combination = 0, {"holdout_examples": 0, "weights": combiner.summed}
    refit_steps = steps_over(train_examples)
    logging.info("Wide path: %d steps of SGD over every training review", refit_steps)
    fit_wide_path(model, datasets(True, None), refit_steps, config, ratios)
    validation = validate()
    logging.info("Validation accuracy of the combination and of each path: %s", validation)
    return {
        "wide_path_steps": steps,
        "wide_path_training": trained,
        "combination": combination,
        "wide_path_refit_steps": refit_steps,
        "validation": validation,
        "seconds": round(time.perf_counter() - started, 1),
    }
