"""The text encoder classifier's run over Transform's output (prepare), and the Trainer's and
the Tuner's entry points: training/run_fn.py fits and exports what prepare returns."""

import dataclasses

from absl import logging

from trainer_module.text_encoder import FAMILY
from trainer_module.text_encoder.model import build_model, pretraining
from trainer_module.text_encoder.preprocessing import TOKEN_IDS, vocabulary_size
from trainer_module.text_encoder.serving import export, model_inputs
from trainer_module.training.inputs import TrainerRun, start_run
from trainer_module.training.run_fn import trainer_entry_point, tuner_entry_point
from trainer_module.training.wide_path import TextClassifierPrepared


@dataclasses.dataclass(frozen=True)
class TextEncoderPrepared(TextClassifierPrepared):
    token_ids = TOKEN_IDS

    def build(self, config, train_steps):
        return build_model(config, train_steps, self.ngram_ratios)

    def pretraining(self, model):
        return pretraining(self.served(model), self.pretraining_batches)

    def export(self, model, serving_model_dir):
        export(model, self.tf_transform_output, serving_model_dir, self.class_names)


def prepare(run: TrainerRun) -> TextEncoderPrepared:
    config, tf_transform_output, run = start_run(run, FAMILY)
    config = config.replace(vocab_size=vocabulary_size(tf_transform_output))
    logging.info("Text encoder config %s", config)
    return TextEncoderPrepared.create(run, config, tf_transform_output, model_inputs)


# The TFX Trainer's and Tuner's entry points (FAMILY.run_fn, FAMILY.tuner_fn).
run_fn = trainer_entry_point(prepare)
tuner_fn = tuner_entry_point(prepare, FAMILY.search_space)
