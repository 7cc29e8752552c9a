"""Export machinery every model family shares: the SavedModel archive and the classifier
signatures (raw input in, predictions out, preprocessing inside the graph)."""
