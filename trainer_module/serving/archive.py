"""Writes a SavedModel from a Keras 3 model, the tf.Transform layer and plain tf.functions."""
import keras


def write_saved_model(export_dir: str, model: keras.Model, tft_layer, endpoints: dict) -> None:
    """`endpoints`: signature name -> tf.function with an input_signature. The model and the
    transform layer are tracked so their variables and assets (vocabularies) are saved."""
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(tft_layer)
    for name, function in endpoints.items():
        archive.add_endpoint(name, function)
    archive.write_out(export_dir, verbose=False)
