"""ModelRegistry: registers each pushed model version in MLflow's or Vertex AI's registry
(component.py). Nothing is imported here, so that the CLI can read `version.CHAMPION` without
loading TensorFlow."""
