"""A tiny translator overfitted to a few pairs, shared by the model and serving tests."""
import keras
import numpy as np

from trainer_module.models.translator import TransformerTranslator
from trainer_module.training.optimizers import adamw
from trainer_module.training.sequence_losses import MaskedSequenceCrossEntropy, MaskedTokenAccuracy

PAIRS = [("Ein Mann läuft.", "A man is running."),
         ("Eine Frau sitzt.", "A woman is sitting."),
         ("Zwei Hunde spielen im Park.", "Two dogs are playing in the park."),
         ("Ein Kind lacht.", "A child is laughing.")]


def tiny_translator(source_vocab: int, target_vocab: int, length: int = 12,
                    **kwargs) -> TransformerTranslator:
    keras.utils.set_random_seed(0)
    options = dict(d_model=32, num_heads=2, ff_dim=64, encoder_layers=1, decoder_layers=1,
                   dropout=0.0)
    options.update(kwargs)
    model = TransformerTranslator(source_vocab, target_vocab, length, length, **options)
    model.compile(optimizer=adamw(3e-3, 0.0), loss=MaskedSequenceCrossEntropy(),
                  metrics=[MaskedTokenAccuracy()])
    ids = np.ones((1, 2), dtype="int32")
    model({"source_ids": ids, "decoder_input_ids": ids})  # build the weights
    return model


def overfit(model: TransformerTranslator, source_ids, decoder_input_ids, target_ids,
            epochs: int = 150) -> float:
    """Trains on the whole (tiny) batch; returns the final token accuracy."""
    inputs = {"source_ids": np.asarray(source_ids), "decoder_input_ids": np.asarray(decoder_input_ids)}
    history = model.fit(inputs, np.asarray(target_ids), batch_size=len(target_ids),
                        epochs=epochs, verbose=0)
    return history.history["token_accuracy"][-1]
