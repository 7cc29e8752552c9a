"""Fine-tunes a KerasHub BERT classifier on Transform's output, in two phases, and exports it;
the Trainer's entry point (a pretrained backbone has no search space: no Tuner)."""
import math
import os
import time

import keras
from absl import logging
from tfx.components.trainer.fn_args_utils import FnArgs

from trainer_module.bert import FAMILY
from trainer_module.bert.config import BertConfig
from trainer_module.bert.model import bert_classifier
from trainer_module.bert.serving import bert_inputs, export
from trainer_module.training import backup
from trainer_module.training.history import LogEvaluations, throughput, write_history
from trainer_module.training.inputs import make_dataset, start_run
from trainer_module.training.optimizers import adamw
from trainer_module.training.run_fn import trainer_entry_point
from trainer_module.training.schedules import WarmupLinearDecay


def _compile(model, learning_rate, config: BertConfig) -> None:
    model.compile(optimizer=adamw(learning_rate, config.weight_decay),
                  loss=keras.losses.CategoricalCrossentropy(from_logits=True),
                  metrics=[keras.metrics.CategoricalAccuracy(name="accuracy")])


def train_and_export(fn_args: FnArgs) -> keras.Model:
    config, tf_transform_output = start_run(fn_args, FAMILY)
    train, evaluation = (
        make_dataset(fn_args, files, tf_transform_output, bert_inputs, config.batch_size,
                     config.num_classes, shuffle)
        for files, shuffle in ((fn_args.train_files, True), (fn_args.eval_files, False)))
    model = bert_classifier(config)
    logging.info("BERT classifier config %s", config)

    head_steps = int(fn_args.train_steps * config.head_fraction)
    phases = [("head", head_steps, False, config.head_learning_rate),
              ("full", fn_args.train_steps - head_steps, True,
               None)]  # the full phase's schedule depends on its step count
    history, started, resumed_from_step = {}, time.perf_counter(), 0
    for name, steps, backbone_trainable, learning_rate in phases:
        if steps <= 0:
            continue
        model.backbone.trainable = backbone_trainable
        if learning_rate is None:
            learning_rate = WarmupLinearDecay(config.learning_rate,
                                              int(steps * config.warmup_fraction), steps)
        _compile(model, learning_rate, config)
        evaluations = max(1, min(config.evaluations, steps))
        logging.info("Phase %s: %d steps, backbone trainable=%s", name, steps, backbone_trainable)
        callbacks = [keras.callbacks.TensorBoard(
            log_dir=os.path.join(fn_args.model_run_dir, name)), LogEvaluations(evaluations)]
        restore = backup.callback(fn_args, phase=name)  # a finished phase restores as done
        if restore is not None:
            callbacks.insert(0, restore)
        result = model.fit(backup.continued(train, restore, math.ceil(steps / evaluations)),
                           steps_per_epoch=math.ceil(steps / evaluations),
                           epochs=evaluations, validation_data=evaluation,
                           validation_steps=max(1, fn_args.eval_steps or 1),
                           callbacks=callbacks, verbose=0)
        resumed_from_step += restore.resumed_from_step if restore else 0
        for key, values in result.history.items():
            history.setdefault(key, []).extend(float(v) for v in values)

    write_history(fn_args.model_run_dir, config.to_dict(), history,
                  **throughput(time.perf_counter() - started, fn_args, config.batch_size,
                               resumed_from_step=resumed_from_step))
    export(model, tf_transform_output, fn_args.serving_model_dir)
    return model


# The TFX Trainer's entry point (FAMILY.run_fn).
run_fn = trainer_entry_point(train_and_export)
