"""The lab: benchmarks that measure the project on real data and print ratios against a baseline
run side by side. Each runs as a module from the repository root, e.g.
`.venv/bin/python -m benchmarks.imdb_pipeline --help`, and writes its results under
`benchmarks/results/`, which the documentation's tables are built from (docs/benchmarks.md)."""
