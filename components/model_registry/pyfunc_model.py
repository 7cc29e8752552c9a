"""The Python code of every registered MLflow Model (MLflow's "models from code": this file is
copied into the model and run by `mlflow.pyfunc.load_model`, so it imports only the serving
stack: TensorFlow, tensorflow-text, pandas and MLflow, never this project).

It wraps the pushed SavedModel's raw-input signature, whichever the task exported:

  classify_text(text)    -> label, label_id, probabilities   (IMDB)
  classify_image(image)  -> label, label_id, probabilities   (CIFAR-10; JPEG or PNG bytes,
                                                               or their base64)
  translate(source)      -> translation                      (German -> English)

The DataFrame's column has the signature's input name. A bad value (empty, too long, not an
image) raises an MlflowException that names the row, which MLflow's server answers with 400.
"""
import base64
import binascii

import mlflow
import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

SAVED_MODEL = "saved_model"  # the artifact: a copy of the pushed SavedModel
# Each raw-input signature and the name of its one input.
INPUTS = {"classify_text": "text", "classify_image": "image", "translate": "source"}
MAX_TEXT_CHARACTERS = 100_000  # a long review is about 14,000
MAX_IMAGE_BYTES = 20 * 1024 * 1024
IMAGE_MAGIC = (b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n")  # JPEG, PNG


def bad_input(message: str) -> MlflowException:
    return MlflowException(message, error_code=INVALID_PARAMETER_VALUE)


def check_text(where: str, value) -> str:
    """`value` if it is a text the model can take, else a bad_input naming `where` (row 3)."""
    if not isinstance(value, str):
        raise bad_input(f"{where}: expected a string, got {type(value).__name__}")
    if not value.strip():
        raise bad_input(f"{where}: the text is empty")
    if len(value) > MAX_TEXT_CHARACTERS:
        raise bad_input(f"{where}: the text has {len(value):,} characters; "
                        f"at most {MAX_TEXT_CHARACTERS:,} are accepted")
    return value


def check_image(where: str, value) -> bytes:
    """The image bytes of `value` (bytes, or their base64), else a bad_input naming `where`."""
    if isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise bad_input(f"{where}: a string image must be base64") from None
    if not isinstance(value, (bytes, bytearray)):
        raise bad_input(f"{where}: expected image bytes, got {type(value).__name__}")
    if len(value) > MAX_IMAGE_BYTES:
        raise bad_input(f"{where}: the image has {len(value):,} bytes; "
                        f"at most {MAX_IMAGE_BYTES:,} are accepted")
    if not bytes(value).startswith(IMAGE_MAGIC):
        raise bad_input(f"{where}: not a JPEG or PNG image")
    return bytes(value)


class SavedModelPyfunc(mlflow.pyfunc.PythonModel):
    """Answers a DataFrame of raw inputs with the SavedModel's raw-input signature."""

    def load_context(self, context):
        import tensorflow as tf

        try:
            import tensorflow_text  # noqa: F401  registers the WordPiece ops of BERT models
        except ImportError:
            pass
        self.model = tf.saved_model.load(context.artifacts[SAVED_MODEL])
        found = [name for name in INPUTS if name in self.model.signatures]
        if not found:
            raise MlflowException(f"the SavedModel has none of the signatures {list(INPUTS)}")
        self.signature = found[0]
        self.input = INPUTS[self.signature]
        self.function = self.model.signatures[self.signature]

    # (A DataFrame hint: MLflow infers no signature from it, and uses the one logged.)
    def predict(self, context, model_input: pd.DataFrame, params=None):
        import tensorflow as tf

        if isinstance(model_input, dict):
            model_input = pd.DataFrame(model_input)
        if self.input not in model_input:
            raise bad_input(f"missing the column {self.input!r} "
                            f"(got {list(model_input.columns)})")
        values = list(model_input[self.input])
        if not values:
            raise bad_input("no rows to predict")
        check = check_image if self.input == "image" else check_text
        values = [check(f"row {row}", value) for row, value in enumerate(values)]
        try:
            outputs = self.function(**{self.input: tf.constant(values)})
        except tf.errors.InvalidArgumentError as error:
            raise bad_input(f"cannot use the input: {error.message.splitlines()[0]}") from None
        if self.signature == "translate":
            return pd.DataFrame({"translation": [t.decode("utf-8")
                                                 for t in outputs["translation"].numpy()]})
        return pd.DataFrame({
            "label": [name.decode("utf-8") for name in outputs["label_name"].numpy()],
            "label_id": outputs["label"].numpy().astype("int64"),
            "probabilities": [row.tolist() for row in outputs["probabilities"].numpy()],
        })


mlflow.models.set_model(SavedModelPyfunc())
