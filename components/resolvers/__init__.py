"""The pipeline's own resolver strategies: they follow MLMD lineage (lineage.py)."""
