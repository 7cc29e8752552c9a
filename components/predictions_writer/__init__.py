from components.predictions_writer.component import Predictions, PredictionsWriter  # noqa: F401
