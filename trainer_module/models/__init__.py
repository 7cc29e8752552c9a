"""Model families (Keras 3, backend-agnostic) and their typed presets."""
