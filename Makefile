# One home for the developer commands. `make setup` then `make test`; `make run` runs the main job.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
UV_VERSION := 0.13.8
PYTEST_ARGS ?=

.PHONY: setup image image-tools gcs-emulator browser services test-services lock test test-slow test-kfp-releases flink spark test-engines test-fast lint format docs docs-serve run run-bert run-translation run-cifar10 report report-screenshot clean

# Installs with bytecode compiled, as pip does and uv does not by default: without it every
# process compiles the stack's ~9,000 modules on import where PYTHONDONTWRITEBYTECODE is set
# (this machine: importing TensorFlow, TFX, Beam, TFMA and MLflow, 24 s against 9 s).
setup: $(VENV)/.installed

$(VENV)/.installed: requirements/lock.txt pyproject.toml
	@scripts/check_python.sh "$(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	UV_PYTHON_DOWNLOADS=never $(VENV)/bin/uv pip install --python $(PY) --no-deps --compile-bytecode -r requirements/lock.txt
	UV_PYTHON_DOWNLOADS=never $(VENV)/bin/uv pip install --python $(PY) --no-deps -e .
	$(PY) -c "import tfx, tensorflow, keras, tensorflow_transform, tensorflow_model_analysis; print('stack ok: tfx', tfx.__version__, '| tensorflow', tensorflow.__version__, '| keras', keras.__version__)"
	@touch $@

# The pipeline image (kubeflow/Dockerfile), with Docker where a daemon runs, else with buildah's
# chroot isolation on a Debian stand-in for Beam's SDK image (scripts/image.sh says how, and what
# IMAGE, GPU, BASE_IMAGE, CA_BUNDLE and UV_CACHE set). `launch --image IMAGE` runs a job in it.
IMAGE ?= localhost/tfx-transformers:dev
GPU ?= 0
image:
	IMAGE="$(IMAGE)" GPU="$(GPU)" scripts/image.sh

# buildah and debootstrap from Debian's packages, for `make image` where no Docker daemon runs.
image-tools:
	@command -v buildah >/dev/null && command -v debootstrap >/dev/null \
	  || $(SUDO) apt-get install -y --no-install-recommends buildah debootstrap \
	  || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends buildah debootstrap; }
	@buildah --version

# fake-gcs-server, the Cloud Storage emulator `launch --gcs-emulator` and the GCS tests run
# (pipeline/launch/gcs.py), built from Go's module proxy into .tools/bin (needs Go; without it
# those tests skip, unless REQUIRE_GCS_EMULATOR=1, as in CI).
gcs-emulator: setup
	$(PY) -m pipeline.launch.gcs install

# Debian's Chromium, for the run report's browser test (the test skips without it, unless
# REQUIRE_BROWSER=1, as in CI). Playwright drives it; no browser is downloaded.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
browser:
	@command -v chromium >/dev/null || $(SUDO) apt-get install -y --no-install-recommends chromium \
	  || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium; }
	@chromium --version 2>/dev/null

# A team's servers for the services tier: PostgreSQL (the MLflow tracking server's backend
# store) and MariaDB (ML Metadata) from Debian's packages, private instances on loopback ports
# (scripts/services.sh; `scripts/services.sh stop` stops them).
services:
	@scripts/services.sh

lock: setup
	scripts/lock.sh

# The default suite: unit tests, one Trainer run per family and the tests that read them, the
# main job end to end on tiny data; on two workers (tests sharing a session run stay on one:
# tests/conftest.py). Its budget: 8 minutes on the slowest machine kind (docs/reference/tests.md).
test: setup
	$(PY) -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

# The slow tier: every test with a pipeline run, a server, a process or a training of its own
# (reruns, the other tasks' and BERT's pipelines, the TFX CLI, compiled jobs launched, the
# tracking server, processes killed with -9, a full disk, XLA); CI runs it after `make test`.
test-slow: setup
	$(PY) -m pytest -n 2 --dist loadgroup -m "slow and not engines" $(PYTEST_ARGS)

# The kubeflow job launched in the image once in each older Kubeflow Pipelines release's input
# shape (2.3, 2.4, 2.14; the slow tier runs the newest's), on the GCS emulator: on purpose
# (after `make image gcs-emulator`).
test-kfp-releases: setup
	$(PY) -m pytest -n 2 -m kfp_releases $(PYTEST_ARGS)

# A Flink session cluster on loopback and Beam's Flink job server (scripts/flink.sh: Flink from
# PyPI, the runner from Maven Central; `make flink` fetches them, the tests start and stop it;
# without them the slow tier's Flink launch skips, unless REQUIRE_ENGINES=1, as in CI).
flink:
	scripts/flink.sh install

# The same for Spark (scripts/spark.sh: Spark from the pyspark sdist, 317 MB, the runner from
# Maven Central).
spark:
	scripts/spark.sh install

# The IMDB job launched in the image with its Beam steps on a real Spark cluster, against the
# local runner's outputs: on purpose (after `make image`; the slow tier runs it on Flink).
test-engines: setup flink spark
	$(PY) -m pytest -n 2 --dist loadgroup -m engines $(PYTEST_ARGS)

# The services tier: the registry on an MLflow tracking server backed by PostgreSQL, pipelines
# started together against it, ML Metadata on MariaDB (after `make services`; without the
# servers these tests skip, unless REQUIRE_SERVICES=1, as in CI).
test-services: setup
	$(PY) -m pytest -n 2 -m services $(PYTEST_ARGS)

# Without the end-to-end pipeline runs (a few minutes).
test-fast: setup
	$(PY) -m pytest -n 2 --dist loadgroup -m "not e2e and not slow" $(PYTEST_ARGS)

# Lint and format check (ruff, configured in pyproject.toml; CI and .pre-commit-config.yaml run
# the same); `make format` rewrites the tree.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The documentation site, built into site/ with --strict: a broken link, a missing page or a
# placeholder the code cannot fill fails the build (scripts/docs_macros.py). `make docs-serve`
# serves it on localhost:8000 while you edit. `python -m` from the checkout: the placeholders
# import benchmarks/ from it.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

docs-serve: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve

# The main job: the IMDB pipeline on the embedded default data, ending with a pushed model.
run: setup
	$(VENV)/bin/tfx-transformers run --task imdb

# The same pipeline with the BERT family, from a tiny randomly initialised checkpoint in Hugging
# Face's layout (pretrained ones download at run time: docs/models/bert.md).
BERT_TINY_CHECKPOINT := outputs/bert_tiny_random_hf
run-bert: setup
	test -d $(BERT_TINY_CHECKPOINT) || $(PY) -m lab.tiny_bert $(BERT_TINY_CHECKPOINT) --format transformers
	$(VENV)/bin/tfx-transformers run --task imdb --model bert --bert-preset $(BERT_TINY_CHECKPOINT) --preset tiny

# The translation pipeline (German -> English) on the embedded parallel corpus.
run-translation: setup
	$(VENV)/bin/tfx-transformers run --task translation

# The image pipeline (a Vision Transformer) on the embedded shapes (data/shapes).
run-cifar10: setup
	$(VENV)/bin/tfx-transformers run --task cifar10

# The run report's screenshot on docs/report.md, from a real run of the main job on the
# embedded corpus in a fresh folder, in headless Chromium (after `make browser`).
report-screenshot: setup
	$(PY) -m scripts.report_screenshot --output docs/figures/run-report.png

# The path of the newest run report (open it in a browser).
report: setup
	@$(VENV)/bin/tfx-transformers report

clean:
	rm -rf outputs .pytest_cache site
