"""Every internal of Keras and KerasHub the project reads (trainer_module/compat.py), checked
against the installed versions: an upgrade that moves one fails here, by name."""

import keras
import keras_hub
import numpy as np

from trainer_module import compat


def test_the_optimizers_schedule_and_the_epoch_a_restored_fit_starts_from(tmp_path):
    schedule = keras.optimizers.schedules.CosineDecay(1e-3, 10)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.AdamW(schedule), loss="mse")
    assert compat.learning_rate_schedule(model.optimizer) is schedule
    assert compat.learning_rate_schedule(keras.optimizers.AdamW(1e-3)) is None
    assert compat.initial_epoch(model) is None  # no backup restored
    x, y = np.ones((4, 2)), np.ones((4, 1))

    def backup():
        return keras.callbacks.BackupAndRestore(str(tmp_path), delete_checkpoint=False)

    model.fit(x, y, epochs=1, callbacks=[backup()], verbose=0)
    model.fit(x, y, epochs=3, callbacks=[backup()], verbose=0)  # restores after epoch 1
    assert compat.initial_epoch(model) == 1


def test_which_variables_keras_autocasts():
    layer = keras.layers.Dense(2, dtype="mixed_bfloat16")
    norm = keras.layers.LayerNormalization(dtype="mixed_bfloat16")
    layer.build((None, 2))
    norm.build((None, 2))
    assert compat.autocasts(layer.kernel)
    assert not compat.autocasts(norm.gamma)


def test_a_keras_hub_encoder_blocks_attention_dropout_gelu_and_norms():
    block = keras_hub.layers.TransformerEncoder(intermediate_dim=8, num_heads=2, dropout=0.1)
    block.build((None, 3, 4))
    compat.set_attention_dropout(block, 0.0)
    assert block._self_attention_layer._dropout == 0.0 and block.dropout == 0.1
    assert isinstance(compat.feedforward_intermediate_dense(block), keras.layers.Dense)
    norms = compat.layer_norms(block)
    assert len(norms) == 2 and all(isinstance(n, keras.layers.LayerNormalization) for n in norms)


def test_keras_hubs_preset_files_and_bert_converter(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    assert compat.check_file_exists(str(tmp_path), "config.json")
    assert compat.load_json(str(tmp_path), "config.json") == {"model_type": "bert"}
    assert compat.get_file(str(tmp_path), "config.json").endswith("config.json")
    assert callable(compat.convert_bert.convert_backbone_config)
    assert callable(compat.convert_bert.convert_weights)
