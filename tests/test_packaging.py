"""What a user installs and runs from outside: the package metadata, the sdist manifest, the GitHub
Action (action.yml). Offline checks only; the build itself (`python -m build`, `twine check`) is in
CONTRIBUTING.md's release checklist."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from jaxcheck.analyzer.output import FORMATTERS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_is_mit_and_ships_in_sdist_and_wheel():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "include LICENSE" in (ROOT / "MANIFEST.in").read_text()


def test_py_typed_ships_with_the_package():
    assert (ROOT / "jaxcheck" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["jaxcheck"]


def test_sdist_holds_what_its_test_suite_needs():
    manifest = (ROOT / "MANIFEST.in").read_text()
    for folder in ("tests", "examples", "docs", "bench", ".ci"):
        assert f"graft {folder}\n" in manifest, folder
    for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md", "action.yml", ".pre-commit-hooks.yaml"):
        assert name in manifest and (ROOT / name).is_file(), name


def test_project_urls_and_changelog():
    urls = PYPROJECT["project"]["urls"]
    assert {"Homepage", "Repository", "Issues", "Changelog"} <= set(urls)
    assert all(url.startswith("https://github.com/jaxcheck/jaxcheck") for url in urls.values())
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(r"^## \[?Unreleased\]?", changelog, re.M) and PYPROJECT["project"]["version"] in changelog


def test_action_yml_shape():
    yaml = pytest.importorskip("yaml")
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["name"] and action["description"]
    assert {"args", "version", "sarif", "sarif-file"} <= set(action["inputs"])
    assert action["inputs"]["sarif"]["default"] == "false"
    assert all("description" in spec for spec in action["inputs"].values())
    runs = action["runs"]
    assert runs["using"] == "composite"
    steps = runs["steps"]
    for step in steps:
        assert ("uses" in step) != ("run" in step), step
        if "run" in step:
            assert step["shell"] == "bash", step
    scripts = "\n".join(step.get("run", "") for step in steps)
    assert '"$GITHUB_ACTION_PATH"' in scripts  # installs its own checkout: no release exists
    formats = re.findall(r"--format (\w+)", scripts)
    assert formats == ["github", "sarif"] and set(formats) <= set(FORMATTERS)
    upload = next(step for step in steps if "upload-sarif" in step.get("uses", ""))
    assert "inputs.sarif == 'true'" in upload["if"]
    # inputs reach scripts through env, never spliced into the script text (injection)
    assert "${{" not in scripts
    assert action["outputs"]["exit-code"]["value"] == "${{ steps.check.outputs.exit-code }}"


def test_readme_workflow_uses_the_action_and_pre_commit_pins_nothing_missing():
    readme = (ROOT / "README.md").read_text()
    assert "uses: jaxcheck/jaxcheck@" in readme
    assert "rev: v0.1.0" not in readme  # no such tag exists
    assert "pip install jaxcheck\n" not in readme and "pip install jaxcheck`" not in readme  # not on PyPI yet


def test_the_readme_sample_output_is_what_a_run_on_the_examples_prints():
    """The console sample at the top of the README: its finding lines and summary come from a real run."""
    import subprocess

    from conftest import checkout_environment

    readme = (ROOT / "README.md").read_text()
    sample = re.search(r"```console\n\$ jaxcheck check --format concise examples/\n(.*?)```", readme, re.S)
    assert sample is not None
    shown = [line for line in sample.group(1).splitlines() if line != "..."]
    run = subprocess.run([sys.executable, "-m", "jaxcheck", "check", "--format", "concise", "examples/"], cwd=ROOT,
                         capture_output=True, text=True, env=checkout_environment(), check=False)
    printed = run.stdout.splitlines()
    assert shown[:3] == printed[:3] and shown[-2:] == printed[-2:], (shown, printed[:3], printed[-2:])


def test_install_hints_name_the_extras_requirements_as_pyproject_lists_them():
    from jaxcheck.extras import REQUIREMENTS

    extras = PYPROJECT["project"]["optional-dependencies"]
    for extra, requirements in REQUIREMENTS.items():
        assert requirements == tuple(requirement.split(";")[0].strip() for requirement in extras[extra]), extra


_MISSING = "import runpy, sys\nsys.modules[{module!r}] = None\nsys.argv = {argv!r}\nrunpy.run_module({main!r}, run_name='__main__')\n"


@pytest.mark.parametrize(("module", "main", "argv", "needed"), [
    ("pygls", "jaxcheck", ["jaxcheck", "server"], "pip install 'pygls>=2.0' 'lsprotocol>=2024.0.0' (in a jaxcheck "
                                                  "checkout: pip install '.[server]')"),
    ("jax", "jaxcheck", ["jaxcheck", "run", "script.py"], "pip install 'jax>=0.10' (Python 3.11 or newer; in a "
                                                          "jaxcheck checkout: pip install '.[runtime]')"),
    ("jax", "pytest", ["pytest", "--jaxcheck", "-p", "no:cacheprovider", "script.py"], "pip install 'jax>=0.10'"),
])
def test_a_missing_optional_part_is_asked_for_by_its_requirements_not_by_a_release_that_does_not_exist(
        tmp_path: Path, module: str, main: str, argv: list[str], needed: str):
    """No release is on PyPI: `pip install 'jaxcheck[server]'` would install nothing (or a stranger's package)."""
    import subprocess

    from conftest import checkout_environment

    (tmp_path / "script.py").write_text("print('ran')\n")
    code = _MISSING.format(module=module, argv=argv, main=main)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env=checkout_environment(), check=False)
    assert run.returncode != 0 and "ran" not in run.stdout
    assert needed in run.stdout + run.stderr and "jaxcheck[" not in run.stdout + run.stderr, run.stdout + run.stderr
    messages = [path for path in (ROOT / "jaxcheck").rglob("*.py") if path.name != "extras.py"
                and "jaxcheck[" in path.read_text(encoding="utf-8")]
    assert not messages
