"""Plots drawn from the results files when the site is built (PLOTS: name -> PNG bytes),
as docs/plots/NAME.png; a page shows one as `{{ plot("NAME") }}`."""

import io

from benchmarks.defaults import default_names
from benchmarks.pages import load_results, short_machine


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # 1,276 pixels wide: the page's width at 1280, at a size where 7-point labels read.
    figure, axes = plt.subplots(figsize=(11.6, 5.4), dpi=110)
    return plt, figure, axes


def _tidy_labels(figure) -> None:
    """Point labels staggered up and down in the order of their points' x (neighbours never
    share a line), and written leftwards in an axes' right third (never past its edge)."""
    for axes in figure.axes:
        labels = [t for t in axes.texts if hasattr(t, "xyann") and t.xycoords == "data"]
        to_axes = axes.transData + axes.transAxes.inverted()
        for index, label in enumerate(sorted(labels, key=lambda t: tuple(t.xy))):
            right = to_axes.transform(label.xy)[0] > 0.66
            label.xyann = (-5 if right else 5, (-1) ** index * (4 + 6 * (index % 3)))
            label.set_horizontalalignment("right" if right else "left")


def _png(plt, figure) -> bytes:
    _tidy_labels(figure)
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()


def _named_points(axes, points, named=None, **scatter) -> None:
    """(x, y, name) points, those in `named` (default: all) labelled with their name (a
    results file's; _tidy_labels places the labels)."""
    if points:
        axes.scatter([p[0] for p in points], [p[1] for p in points], **scatter)
        for x, y, name in points:
            if named is None or name in named:
                axes.annotate(
                    name, (x, y), fontsize=7, xytext=(5, 4), textcoords="offset points", va="center"
                )


def plot_accuracy_against_time() -> bytes:
    """Validation accuracy against training minutes, one point per pipeline results file: a
    colour per task, a marker per machine (minutes compare within one machine only)."""
    plt, figure, axes = _figure()
    series = (("imdb_pipeline", "accuracy", "IMDB"), ("cifar10_pipeline", "accuracy", "CIFAR-10"))
    machines = sorted(
        {short_machine(r) for benchmark, _, _ in series for r in load_results(benchmark)}
    )
    markers = dict(zip(machines, "osD^v<>PX*"))
    colours = dict(zip([label for _, _, label in series], ("tab:blue", "tab:orange")))
    defaults = default_names(embedded=False)
    for benchmark, key, label in series:
        by_machine: dict = {}
        for record in load_results(benchmark):
            measured = record.get("measured") or {}
            minutes = measured.get("fit_minutes") or (
                measured["fit_seconds"] / 60 if measured.get("fit_seconds") else None
            )
            if minutes and measured.get(key):
                by_machine.setdefault(short_machine(record), []).append(
                    (minutes, measured[key], record["name"])
                )
        for machine, points in sorted(by_machine.items()):
            _named_points(
                axes,
                points,
                named=defaults,
                label=f"{label}, {machine}",
                marker=markers[machine],
                color=colours[label],
            )
    axes.set_xscale("log")
    axes.set_xlabel("training time (minutes, log scale); the defaults' runs are named")
    axes.set_ylabel("validation accuracy (TFMA)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="task, machine")
    return _png(plt, figure)


def plot_scaling() -> bytes:
    """Examples per second of each data component against the data's size."""
    plt, figure, axes = _figure()
    for record in load_results("scaling"):
        for row in record.get("rates") or []:
            component, scales, rates = row["component"], row["scales"], row["examples_per_second"]
            axes.plot(scales, rates, marker="o", label=f"{record['name']}: {component}")
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("data size (multiples of the training set)")
    axes.set_ylabel("examples per second")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    return _png(plt, figure)


# The serving paths drawn, and where each is in a results file written before the serving
# runtimes (saved_model, pyfunc, http) and after them.
SERVING_PATHS = {
    "SavedModel": ("saved_model", "savedmodel, in-process"),
    "MLflow pyfunc": ("pyfunc", "savedmodel, pyfunc"),
    "HTTP, MLflow's app": ("http", "savedmodel, http via MLflow's app"),
    "HTTP, chosen runtime": (None, "{chosen}, http"),
}


def serving_p50(result: dict, path: str):
    before, after = SERVING_PATHS[path]
    found = result.get(before) if before else None
    found = found or result.get(after.format(chosen=result.get("chosen", "savedmodel")))
    return found["p50_ms"] if found else 0


def plot_serving() -> bytes:
    """Median latency of one request per model and serving path: every model of every
    serving results file, labelled with its machine (compare bars of one machine only)."""
    plt, figure, axes = _figure()
    paths = tuple(SERVING_PATHS)
    bars = [
        (f"{name}\n{short_machine(record)}", result)
        for record in load_results("serving")
        for name, result in record["results"].items()
    ]
    width = 0.8 / len(paths)
    for i, path in enumerate(paths):
        axes.bar(
            [m + i * width for m in range(len(bars))],
            [serving_p50(result, path) for _, result in bars],
            width,
            label=path,
        )
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    axes.set_xticks(
        [m + width * (len(paths) - 1) / 2 for m in range(len(bars))],
        [n for n, _ in bars],
        fontsize=7,
        rotation=35,
        ha="right",
    )
    axes.set_yscale("log")
    axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(ScalarFormatter())
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.set_ylabel("p50 latency, batch of 1 (ms, log scale)")
    axes.grid(alpha=0.3, axis="y")
    axes.legend(title="served through")
    return _png(plt, figure)


def plot_imdb_frontier() -> bytes:
    """IMDB: validation accuracy against the whole pipeline's minutes, one point per results
    file of the machine named in its file (a name ending in a machine tag), by family."""
    plt, figure, axes = _figure()
    for model, marker in (("text_encoder", "o"), ("bert", "s")):
        points = [
            (r["measured"]["wall_seconds"] / 60, r["measured"]["accuracy"], r["name"])
            for r in load_results("imdb_pipeline")
            if r.get("model") == model
            and (r.get("measured") or {}).get("accuracy")
            and (r.get("measured") or {}).get("wall_seconds")
            and (r.get("machine") or {}).get("cpu_family")  # the machine is identified
        ]
        _named_points(axes, points, named=default_names(embedded=False), label=model, marker=marker)
    for record in load_results("imdb_recipes"):  # the NBSVM anchor (imdb_recipes.py --anchor)
        for table in record.get("tables", []):
            if "val accuracy" not in table["columns"]:
                continue
            column = table["columns"].index("val accuracy")
            for row in table["rows"]:
                if row[0] == "ngram_anchor" and row[column] and "trigram" in record["name"]:
                    axes.axhline(row[column], color="gray", linestyle="--", linewidth=1)
                    axes.annotate(
                        f"NBSVM anchor ({record['name']})",
                        (0.01, row[column]),
                        xycoords=("axes fraction", "data"),
                        fontsize=7,
                        xytext=(0, 3),
                        textcoords="offset points",
                    )
    axes.set_xlabel("whole pipeline (minutes); the defaults' runs are named")
    axes.set_ylabel("validation accuracy (TFMA)")
    axes.grid(alpha=0.3)
    axes.legend()
    return _png(plt, figure)


def plot_label_sizes() -> bytes:
    """IMDB: validation accuracy against labelled training reviews, one line per family."""
    plt, figure, axes = _figure()
    for record in load_results("imdb_label_sizes")[:1]:
        for model in sorted({p["model"] for p in record["points"]}):
            points = sorted(
                (p["train_reviews"], p["accuracy"]) for p in record["points"] if p["model"] == model
            )
            axes.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=model)
    axes.set_xscale("log")
    axes.set_xlabel("labelled training reviews (log scale)")
    axes.set_ylabel("validation accuracy (TFMA)")
    axes.grid(alpha=0.3)
    axes.legend()
    return _png(plt, figure)


def _accuracy_against_pflop(record) -> list:
    """(training PFLOP, val accuracy, first cell) for each row of a results file's tables that
    have both columns."""
    points = []
    for table in record.get("tables", []):
        columns = table["columns"]
        if "training PFLOP" in columns and "val accuracy" in columns:
            x, y = columns.index("training PFLOP"), columns.index("val accuracy")
            points += [(r[x], r[y], r[0]) for r in table["rows"] if r[x] and r[y]]
    return points


def plot_cifar10_pflop() -> bytes:
    """CIFAR-10: validation accuracy against training PFLOP: each pipeline run's evaluations
    (a line), each GPU recipe (a point, its val accuracy), airbench94's published point and its
    point on the project's JPEGs (cifar10_anchor)."""
    plt, figure, axes = _figure()
    for record in load_results("cifar10_pipeline"):
        rows = _accuracy_against_pflop(record)
        if rows:
            axes.plot(
                [r[0] for r in rows],
                [r[1] for r in rows],
                marker=".",
                linewidth=1,
                label=f"pipeline run {record['name']}",
            )
    points = [p for r in load_results("cifar10_recipes") for p in _accuracy_against_pflop(r)]
    if points:
        axes.scatter(
            [p[0] for p in points], [p[1] for p in points], s=12, color="gray", label="GPU recipes"
        )
    _named_points(
        axes,
        [(0.36, 0.94, "airbench94, released pixels (published)")],
        marker="*",
        s=80,
        color="black",
        label="anchor",
    )
    for record in load_results("cifar10_anchor"):  # on these JPEGs: a line per script
        table = record["tables"][0]
        by_script: dict = {}
        for row in (dict(zip(table["columns"], row)) for row in table["rows"]):
            by_script.setdefault(row.get("script", "airbench94.py"), []).append(
                (row["training PFLOP"], row["val accuracy: mean"])
            )
        for script, points in by_script.items():
            points.sort()
            axes.plot(
                *zip(*points),
                marker="*",
                markersize=9,
                linewidth=1,
                linestyle="--",
                label=f"{script.removesuffix('.py')} on these JPEGs ({record['name']})",
            )
    axes.set_xlabel("training arithmetic (PFLOP)")
    axes.set_ylabel("validation accuracy")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(plt, figure)


def plot_translation_epochs() -> bytes:
    """Lower-cased BLEU on val of each default translation run's snapshots by evaluation
    (epoch), and of the averages of its last k snapshots (beam 4, length penalty 1, the run's
    own stopping rule and output vocabulary: each table's first rows)."""
    from benchmarks.defaults import DEFAULT_RESULTS

    plt, figure, axes = _figure()
    names = {n.split("/")[1] for n in DEFAULT_RESULTS[("translation", "translator")]}
    ticks: dict = {}
    for record in load_results("translation_pipeline"):
        if record["name"] not in names:
            continue
        (table,) = [t for t in record["tables"] if t["title"].startswith("BLEU on val")]
        columns = table["columns"]
        bleu, beam, penalty = (
            columns.index("BLEU lower-cased"),
            columns.index("beam"),
            columns.index("length penalty"),
        )
        first = table["rows"][0]
        same = [r for r in table["rows"] if r[1 : bleu - 1] == first[1 : bleu - 1]]
        epochs = [(int(r[0].split()[-1]), r[bleu]) for r in same if r[0].startswith("after")]
        averages: dict = {}  # k -> BLEU, the first row of each k: the run's own settings
        for r in same:
            if r[0].startswith("average"):
                averages.setdefault(int(r[0].split()[-1]), r[bleu])
        label = f"{record['title']}: {short_machine(record)}"
        (line,) = axes.plot(*zip(*epochs), marker="o", label=label)
        last = epochs[-1][0]
        for index, (k, value) in enumerate(averages.items()):
            axes.scatter(
                [last + 2 * (index + 1)], [value], marker="*", s=110, color=line.get_color()
            )
            ticks[last + 2 * (index + 1)] = f"mean of\nlast {k}"
        assert all(r[beam] == first[beam] and r[penalty] == first[penalty] for r in same)
    epochs_ticks = [t for t in axes.get_xticks() if 0 < t < min(ticks or [100]) - 1]
    axes.set_xticks(
        [*epochs_ticks, *ticks], [f"{t:g}" for t in epochs_ticks] + list(ticks.values())
    )
    axes.set_xlabel("evaluations (epochs) trained; stars: the mean of the last k snapshots")
    axes.set_ylabel("BLEU, lower-cased tokenized, val")
    axes.legend(fontsize=8, loc="lower right")
    return _png(plt, figure)


def plot_test_suite() -> bytes:
    """`make test`'s minutes by commit, in the order they were measured, one line per machine
    kind (benchmarks/results/test_suite/)."""
    from benchmarks.pages import MINUTES, TESTS, _measured_when

    plt, figure, axes = _figure()
    records = sorted(
        (r for r in load_results("test_suite") if (r.get("measured") or {}).get(MINUTES)),
        key=_measured_when,
    )
    order = {r["name"]: index for index, r in enumerate(records)}
    for kind in sorted({short_machine(r) for r in records}):
        runs = [r for r in records if short_machine(r) == kind]
        axes.plot(
            [order[r["name"]] for r in runs],
            [r["measured"][MINUTES] for r in runs],
            marker="o",
            label=kind,
        )
    axes.set_xticks(
        range(len(records)),
        [f"{(r.get('commit') or '?')[:7]}\n{r['measured'].get(TESTS) or ''}" for r in records],
        fontsize=7,
    )
    axes.set_xlabel("commit measured, and its number of tests, oldest first")
    axes.set_ylabel("make test, minutes")
    axes.legend(fontsize=8, title="machine (CPU family/model)")
    return _png(plt, figure)


PLOTS = {
    "accuracy_against_time": plot_accuracy_against_time,
    "cifar10_pflop": plot_cifar10_pflop,
    "imdb_frontier": plot_imdb_frontier,
    "label_sizes": plot_label_sizes,
    "scaling": plot_scaling,
    "serving": plot_serving,
    "test_suite": plot_test_suite,
    "translation_epochs": plot_translation_epochs,
}
