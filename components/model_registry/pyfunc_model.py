"""The Python code of every registered MLflow Model (MLflow's "models from code": this file is
copied into the model and run by `mlflow.pyfunc.load_model`, so it imports only the serving
stack: TensorFlow, tensorflow-text, pandas and MLflow, and the served-model contract, whose file
travels beside it in the model; never the rest of this project).

It answers through the pushed SavedModel's raw-input signature, whichever the task exported
(trainer_module/serving/contract.py: classify_text, translate, classify_image), or through the
export's fastest validated ONNX runtime after its tf.Transform graph
(trainer_module/serving/runtimes.py; `serve --runtime` chooses another). The DataFrame's
column has the signature's input name. A bad value (empty, too long, not an image) raises an
MlflowException that names the row, which MLflow's server answers with 400.
"""

import os

import mlflow
import pandas as pd
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

try:  # inside this project
    from trainer_module.serving import contract, runtimes
except ImportError:  # inside a registered MLflow Model: both files are on the model's code path
    import contract  # type: ignore[no-redef]
    import runtimes  # type: ignore[no-redef]

SAVED_MODEL = "saved_model"  # the artifact: a copy of the pushed SavedModel


def bad_input(message: str) -> MlflowException:
    return MlflowException(message, error_code=INVALID_PARAMETER_VALUE)


class SavedModelPyfunc(mlflow.pyfunc.PythonModel):  # type: ignore[name-defined]
    """Answers a DataFrame of raw inputs with the SavedModel's raw-input signature."""

    def load_context(self, context):
        import tensorflow as tf

        try:
            import tensorflow_text  # noqa: F401  registers the WordPiece ops of BERT models
        except ImportError:
            pass
        folder = context.artifacts[SAVED_MODEL]
        self.model = tf.saved_model.load(folder)
        try:
            self.served = runtimes.Served(
                self.model, folder, os.environ.get(runtimes.RUNTIME_VARIABLE, runtimes.AUTO)
            )
        except contract.BadInput as error:
            raise MlflowException(f"the SavedModel has {error}") from None
        except ValueError as error:  # a runtime the model lacks or that failed its check
            raise MlflowException(str(error)) from None
        self.signature, self.input = self.served.signature, self.served.input

    # (A DataFrame hint: MLflow infers no signature from it, and uses the one logged.)
    def predict(self, context, model_input: pd.DataFrame, params=None):
        if isinstance(model_input, dict):
            model_input = pd.DataFrame(model_input)
        if self.input not in model_input:
            raise bad_input(f"missing the column {self.input!r} (got {list(model_input.columns)})")
        answers = self.answers(list(model_input[self.input]))
        frame = pd.DataFrame(answers, columns=list(answers[0]))
        if "label_id" in frame:
            frame["label_id"] = frame["label_id"].astype("int64")
        return frame

    def answers(self, values: list) -> list:
        """One answer (a dict of the contract's columns) per raw value, in order; an
        MlflowException (400) for values that are no model's input. pipeline/serving_app.py
        calls it directly for JSON requests."""
        import tensorflow as tf

        if not values:
            raise bad_input("no rows to predict")
        try:
            if contract.MAX_ROWS_VARIABLE in os.environ:  # set by `tfx-transformers serve`
                contract.check_rows(len(values), int(os.environ[contract.MAX_ROWS_VARIABLE]))
            values = [
                contract.check(self.input, f"row {row}", value) for row, value in enumerate(values)
            ]
        except contract.BadInput as error:
            raise bad_input(str(error)) from None
        try:
            outputs = self.served(values)
        except tf.errors.InvalidArgumentError as error:
            raise bad_input(f"cannot use the input: {error.message.splitlines()[0]}") from None
        answers = [
            contract.answer({name: column[i] for name, column in outputs.items()})
            for i in range(len(values))
        ]
        # The contract's columns this model answers (a classifier exported before `classes`
        # was an output has none), in the contract's order.
        columns = [name for name in contract.ANSWERS[self.signature] if name in answers[0]]
        return [{name: answer[name] for name in columns} for answer in answers]


mlflow.models.set_model(SavedModelPyfunc())
