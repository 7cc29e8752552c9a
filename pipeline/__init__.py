"""The pipeline factory, the tasks it knows, its runners and the tfx-transformers CLI."""
