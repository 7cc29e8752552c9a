#!/usr/bin/env bash
# Continuous training on the embedded IMDB reviews, in three spans: span 1 trains and pushes;
# span 2 (the same reviews again: the same vocabulary) warm-starts from span 1's champion and
# pushes the next version; a window of both spans (--spans 2) trains on both; span 3 (positive
# reviews only, as a CSV file) is refused for drift; then the champion scores a folder of
# unlabeled reviews in bulk (tfx-transformers infer).
#   scripts/spans_walkthrough.sh [WORK_DIR]     (default: a new temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-$(mktemp -d)}"
spans="$work/reviews"
run() {
  .venv/bin/tfx-transformers run --task imdb --data "$spans/span-{SPAN}" --output "$work/out" \
    --registry none "$@" | tail -n 1
}
summary() {  # the parts of a run's JSON line this walk-through is about
  .venv/bin/python -c 'import json, sys
s = json.loads(sys.stdin.read())
states = {}
for component in s.get("components", {}).values():
    states[component["state"]] = states.get(component["state"], 0) + 1
print(json.dumps({"components": states, **{k: s[k] for k in (
    "status", "data", "training", "blessed", "pushed_version", "error") if s.get(k) is not None}}))'
}
mkdir -p "$spans"
cp -r data/imdb/aclImdb "$spans/span-1"
echo "== span 1" && run | summary
cp -r data/imdb/aclImdb "$spans/span-2"
echo "== span 2" && run | summary
echo "== span 2 again (no new span)" && run | summary
echo "== spans 1 and 2 (--spans 2)" && run --spans 2 | summary
mkdir -p "$spans/span-3"
.venv/bin/python - "$spans/span-3/reviews.csv" <<'PY'
import csv, glob, sys
texts = [open(p, encoding="utf-8").read() for p in sorted(glob.glob("data/imdb/aclImdb/*/pos/*.txt"))]
with open(sys.argv[1], "w", newline="", encoding="utf-8") as f:
    csv.writer(f).writerows([("text", "label")] + [(t, 1) for t in texts])
PY
echo "== span 3 (positive reviews only)" && { run || true; } | summary
echo "serving versions: $(ls "$work/out/serving_model/imdb-text-encoder" | tr '\n' ' ')"
mkdir -p "$work/unlabeled"
printf 'A wonderful, moving film; the cast is superb.' > "$work/unlabeled/review-1.txt"
printf '%s\n' '{"text": "Dull, predictable and far too long."}' \
  '{"text": "I laughed and cried: a great night at the movies."}' > "$work/unlabeled/more.jsonl"
echo "== bulk inference over $work/unlabeled (2 files, 3 reviews)"
.venv/bin/tfx-transformers infer --task imdb --data "$work/unlabeled" --output "$work/out" |
  .venv/bin/python -c 'import json, sys
s = json.loads(sys.stdin.read())
print(json.dumps({k: s[k] for k in ("status", "model_version", "predictions")}))
for path in s["prediction_files"]:
    print(open(path).read(), end="")'

