"""The pipeline image's Dockerfile stays in step with the locks and the package layout: it
installs the runtime lock alone, whose pins are the full lock's."""

import re
import subprocess
import sys

from pipeline import configs

DOCKERFILE = (configs.REPO_ROOT / "kubeflow" / "Dockerfile").read_text()
LOCK = (configs.REPO_ROOT / "requirements" / "lock.txt").read_text()
RUNTIME_LOCK = (configs.REPO_ROOT / "requirements" / "runtime-lock.txt").read_text()
RUNTIME_IN = (configs.REPO_ROOT / "requirements" / "runtime.in").read_text()
DEV_IN = (configs.REPO_ROOT / "requirements" / "dev.in").read_text()
MAKEFILE = (configs.REPO_ROOT / "Makefile").read_text()
PYPROJECT = (configs.REPO_ROOT / "pyproject.toml").read_text()


def arg(name: str) -> str:
    return re.search(rf"^ARG {name}=(\S+)$", DOCKERFILE, re.M).group(1)


def pin(package: str) -> str:
    return re.search(rf"^{package}==(\S+)$", LOCK, re.M).group(1)


def test_the_base_image_is_beams_sdk_for_the_locked_beam_and_the_projects_python():
    assert arg("BEAM_VERSION") == pin("apache-beam")
    python = re.search(r'requires-python = ">=(\d+\.\d+)', PYPROJECT).group(1)
    assert arg("BASE_IMAGE") == f"apache/beam_python{python}_sdk:${{BEAM_VERSION}}"
    assert "FROM ${BASE_IMAGE}" in DOCKERFILE
    assert 'ENTRYPOINT ["/opt/apache/beam/boot"]' in DOCKERFILE
    # Its boot binary runs the SDK harness in the image's environment, not a venv of its own.
    assert "RUN_PYTHON_SDK_IN_DEFAULT_ENVIRONMENT=1" in DOCKERFILE


def pins(lock: str) -> dict:
    return dict(re.findall(r"^([A-Za-z0-9_.\-\[\]]+)==(\S+)", lock, re.M))


def requirement_names(text: str) -> set:
    names = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[<>=!~ \[;]", line, maxsplit=1)[0].lower())
    return names


def test_the_image_installs_exactly_the_runtime_lock_as_make_setup_installs_the_full_one():
    assert arg("TENSORFLOW_VERSION") == pin("tensorflow")
    assert arg("UV_VERSION") == re.search(r"^UV_VERSION\s*:?=\s*(\S+)", MAKEFILE, re.M).group(1)
    installs = re.findall(r"uv pip install [^\n]*-r (\S+)", DOCKERFILE)
    assert installs == ["requirements/runtime-lock.txt"]
    assert "--no-deps --compile-bytecode -r requirements/runtime-lock.txt" in DOCKERFILE
    # The CUDA layer may add only TensorFlow's CUDA wheels: the lock constrains the rest.
    assert '-c requirements/runtime-lock.txt "tensorflow[and-cuda]' in DOCKERFILE
    assert "--no-deps --compile-bytecode -r requirements/lock.txt" in MAKEFILE
    # The runtime lock pins every package it holds at the full lock's version.
    runtime, full = pins(RUNTIME_LOCK), pins(LOCK)
    assert runtime and set(runtime) <= set(full)
    assert {name: full[name] for name in runtime} == runtime


def test_the_runtime_lock_leaves_out_the_development_tools():
    runtime = {name.lower() for name in pins(RUNTIME_LOCK)}
    development = requirement_names(DEV_IN) - requirement_names(RUNTIME_IN)
    assert development >= {"pytest", "playwright", "mkdocs", "ruff", "jax", "hypothesis"}
    assert not development & runtime
    assert requirement_names(RUNTIME_IN) <= runtime  # and holds every runtime requirement
    assert "-r runtime.in" in DEV_IN  # the development set is the runtime set and more


def test_the_image_checks_its_packages_and_that_every_step_imports():
    assert "python scripts/pip_check.py requirements/overrides.txt" in DOCKERFILE
    assert "python -m pipeline.image_check" in DOCKERFILE.split("python scripts/pip_check.py")[1]
    # The check passes on this environment (the full set holds the runtime set).
    result = subprocess.run(
        [sys.executable, str(configs.REPO_ROOT / "scripts" / "pip_check.py")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout
    assert "expected conflicts" in result.stdout


def test_every_installed_package_is_copied_into_the_image():
    packages = re.search(r"include = \[(.*)\]", PYPROJECT).group(1)
    for package in re.findall(r'"(\w+)\*"', packages):
        assert f"COPY {package} {package}" in DOCKERFILE
