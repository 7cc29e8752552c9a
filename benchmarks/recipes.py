"""What the recipe benchmarks share (cifar10_recipes.py, imdb_recipes.py): the pipeline's seeded
hash split, recipe strings and the command line."""

import argparse
import hashlib
import json


def bucket(example_id: str, seed: int) -> int:
    """components/seeded_split.py's bucket of an id, out of 100."""
    return int(hashlib.sha256(f"{seed}:".encode() + example_id.encode()).hexdigest(), 16) % 100


def parse_recipe(text: str):
    """`NAME[:FIELD=VALUE,...]` -> (name, {field: int, float or word})."""
    name, _, fields = text.partition(":")
    overrides = {}
    for field in filter(None, fields.split(",")):
        key, value = field.split("=", 1)
        overrides[key] = (
            int(value)
            if value.isdigit()
            else (value if value.replace("_", "").isalpha() else float(value))
        )
    return name, overrides


def main(
    doc: str,
    *,
    data: str,
    cache: str,
    epochs: float,
    recipe: str,
    load,
    run,
    anchor=None,
    argv=None,
) -> None:
    """Parses the command line, loads (and caches) the data, trains each --recipe with
    run(name, overrides, data, epochs, seed) and writes one JSON line per result; `anchor`
    (data -> result), when given, is the --anchor option's non-neural reference."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--data", default=data)
    parser.add_argument("--cache", default=cache, help="the decoded data, written on first use")
    parser.add_argument("--epochs", type=float, default=epochs)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--recipe",
        action="append",
        default=[],
        help=f"NAME[:FIELD=VALUE,...], repeatable (default: {recipe})",
    )
    if anchor:
        parser.add_argument("--anchor", action="store_true", help=anchor.__doc__.split("\n")[0])
    parser.add_argument("--prepare-only", action="store_true", help="decode and cache, then stop")
    parser.add_argument("--output", help="a JSON-lines file to append the results to")
    args = parser.parse_args(argv)
    loaded = load(args.data, args.cache)
    print({split: len(labels) for split, (_, labels) in loaded.items()}, flush=True)
    if args.prepare_only:
        return

    def emit(result):
        print(json.dumps(result), flush=True)
        if args.output:
            with open(args.output, "a") as f:
                f.write(json.dumps(result) + "\n")

    with_anchor = anchor is not None and args.anchor
    if with_anchor:
        emit(anchor(loaded))
    for text in args.recipe or ([] if with_anchor else [recipe]):
        emit(run(*parse_recipe(text), loaded, args.epochs, args.seed))
