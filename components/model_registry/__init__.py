"""ModelRegistry: registers each pushed model version in MLflow's or Vertex AI's registry."""
from components.model_registry.component import ModelRegistry, RegisteredModel

__all__ = ["ModelRegistry", "RegisteredModel"]
