"""What the recipe benchmarks share (cifar10_recipes.py, imdb_recipes.py): the pipeline's seeded
hash split, recipe strings and the command line."""

import argparse
import hashlib
import json
import os
import sys


def member_bytes(archive, member) -> bytes:
    """The bytes of a tar archive's regular-file `member`."""
    f = archive.extractfile(member)
    if f is None:
        raise ValueError(f"{member.name}: not a regular file of the archive")
    return f.read()


def bucket(example_id: str, seed: int) -> int:
    """components/seeded_split.py's bucket of an id, out of 100."""
    return int(hashlib.sha256(f"{seed}:".encode() + example_id.encode()).hexdigest(), 16) % 100


def parse_recipe(text: str):
    """`NAME[:FIELD=VALUE,...]` -> (name, {field: int, float, bool (true/false) or word})."""
    name, _, fields = text.partition(":")
    overrides = {}
    for field in filter(None, fields.split(",")):
        key, value = field.split("=", 1)
        overrides[key] = _value(value)
    return name, overrides


def _value(text: str):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


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
    columns=(),
    argv=None,
) -> None:
    """Parses the command line, loads (and caches) the data, trains each --recipe with
    run(name, overrides, data, epochs, seed) and writes one JSON line per result; `anchor`
    (data -> result), when given, is the --anchor option's non-neural reference; `columns`,
    (name, result -> value) pairs, are the benchmark's own columns in the results table."""
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
    parser.add_argument(
        "--name",
        help="also write the results as benchmarks/results/<benchmark>/NAME.json (a table)",
    )
    parser.add_argument(
        "--results-from",
        metavar="JSONL",
        help="train nothing: tabulate the results an earlier run appended to JSONL (with --name)",
    )
    args = parser.parse_args(argv)
    benchmark = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    if args.results_from:
        with open(args.results_from) as f:
            save(benchmark, args.name, [json.loads(line) for line in f if line.strip()], columns)
        return
    loaded = load(args.data, args.cache)
    print({split: len(labels) for split, (_, labels) in loaded.items()}, flush=True)
    if args.prepare_only:
        return

    emit = emitter(args.output)
    results = []
    with_anchor = anchor is not None and args.anchor
    if with_anchor:
        results.append(anchor(loaded))
        emit(results[-1])
    for text in args.recipe or ([] if with_anchor else [recipe]):
        results.append(run(*parse_recipe(text), loaded, args.epochs, args.seed))
        emit(results[-1])
    if args.name:
        save(benchmark, args.name, results, columns)


def emitter(output):
    """result -> None: prints it as a JSON line, and appends it to `output` when given."""

    def emit(result):
        print(json.dumps(result), flush=True)
        if output:
            with open(output, "a") as f:
                f.write(json.dumps(result) + "\n")

    return emit


def save(benchmark: str, name: str, results: list, extra=()) -> None:
    """The results as one table (a row per recipe) in a results file the docs render; `extra`:
    (column, result -> value) pairs appended to each row."""
    from benchmarks import report

    columns = ["recipe", "overrides", "epochs", "images/s", "selection accuracy"]
    columns += ["selection accuracy by quarter", "val accuracy", "backend"]
    rows = [
        [
            r.get("recipe"),
            " ".join(f"{k}={v}" for k, v in r.get("overrides", {}).items()),
            r.get("epochs"),
            r.get("images_per_second"),
            r.get("selection_accuracy"),
            " / ".join(str(a) for a in r.get("selection_accuracy_by_quarter", [])),
            r.get("val_accuracy"),
            r.get("backend"),
            *(value(r) for _, value in extra),
        ]
        for r in results
    ]
    columns += [column for column, _ in extra]
    title = "Recipes on the selection split (chosen there; val is the pipeline's split)"
    report.save(benchmark, name, {"tables": [{"title": title, "columns": columns, "rows": rows}]})
