"""The pipeline image's Dockerfile stays in step with the lock and the package layout."""

import re

from pipeline import configs

DOCKERFILE = (configs.REPO_ROOT / "kubeflow" / "Dockerfile").read_text()
LOCK = (configs.REPO_ROOT / "requirements" / "lock.txt").read_text()
MAKEFILE = (configs.REPO_ROOT / "Makefile").read_text()
PYPROJECT = (configs.REPO_ROOT / "pyproject.toml").read_text()


def arg(name: str) -> str:
    return re.search(rf"^ARG {name}=(\S+)$", DOCKERFILE, re.M).group(1)


def pin(package: str) -> str:
    return re.search(rf"^{package}==(\S+)$", LOCK, re.M).group(1)


def test_the_base_image_is_beams_sdk_for_the_locked_beam_and_the_projects_python():
    assert arg("BEAM_VERSION") == pin("apache-beam")
    python = re.search(r'requires-python = ">=(\d+\.\d+)', PYPROJECT).group(1)
    assert f"FROM apache/beam_python{python}_sdk:${{BEAM_VERSION}}" in DOCKERFILE
    assert 'ENTRYPOINT ["/opt/apache/beam/boot"]' in DOCKERFILE


def test_the_stack_is_installed_from_the_lock_as_make_setup_does():
    assert arg("TENSORFLOW_VERSION") == pin("tensorflow")
    assert arg("UV_VERSION") == re.search(r"^UV_VERSION\s*:?=\s*(\S+)", MAKEFILE, re.M).group(1)
    assert "--no-deps -r requirements/lock.txt" in DOCKERFILE


def test_every_installed_package_is_copied_into_the_image():
    packages = re.search(r"include = \[(.*)\]", PYPROJECT).group(1)
    for package in re.findall(r'"(\w+)\*"', packages):
        assert f"COPY {package} {package}" in DOCKERFILE
