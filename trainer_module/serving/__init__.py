"""SavedModel signatures: raw inputs in, predictions out, preprocessing inside the graph."""
