"""The real pre-commit, with the README's configuration, against a temporary
git repository that uses (a snapshot of) this repository as its hook source.

pre-commit builds the hook's environment with pip: devlint's dependencies
(libcst, click; setuptools to build) come from the package index, so the test
needs PyPI, and nothing else. It runs once per session, in about a minute.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli_run import BAD, DEV201_LINE

pytestmark = pytest.mark.precommit

REPO = Path(__file__).resolve().parent.parent
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def readme_config() -> str:
    """The `.pre-commit-config.yaml` the README tells users to paste."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use with pre-commit", 1)[1]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


def test_hooks_file_declares_both_hooks():
    import yaml  # pre-commit's own dependency

    hooks = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"devlint", "devlint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["types_or"] == ["python", "jupyter"]
        assert hook["require_serial"] is True and hook["args"] == ["--force-exclude"]
    assert "--fix" in hooks["devlint-fix"]["entry"].split() and "--fix" not in hooks["devlint"]["entry"].split()


@pytest.fixture(scope="module")
def hook_source(tmp_path_factory) -> tuple[Path, str]:
    """This repository's working tree as a git repository pre-commit can clone."""
    src = tmp_path_factory.mktemp("hook-source")
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "devlint", src / "devlint", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(src, "init", "-q")
    git(src, "add", ".")
    git(src, "commit", "-q", "-m", "snapshot")
    return src, git(src, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def user_repo(tmp_path_factory, hook_source) -> Path:
    src, rev = hook_source
    repo = tmp_path_factory.mktemp("user-repo")
    config = readme_config()
    config = re.sub(r"repo: \S+", f"repo: {src.as_posix()}", config, count=1)
    config = re.sub(r"rev: \S+", f"rev: {rev}", config, count=1)
    config = config.replace("# - id: devlint-fix", "- id: devlint-fix\n        stages: [manual]")
    (repo / ".pre-commit-config.yaml").write_text(config)
    (repo / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["vendor"]\n')
    (repo / "bad.py").write_text(BAD)
    (repo / "clean.py").write_text("import torch\nx = torch.zeros(2)\n")
    (repo / "vendor").mkdir()
    (repo / "vendor" / "third_party.py").write_text(BAD)
    (repo / "notes.txt").write_text("x.to(torch.float16, 'cpu')\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    return repo


def pre_commit(repo: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PRE_COMMIT_HOME=str(repo.parent / "pre-commit-home"), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("DEVLINT_OUTPUT_FORMAT", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )


def test_readme_config_flags_a_staged_bad_file(user_repo):
    out = pre_commit(user_repo, "run", "--all-files")
    shown = out.stdout + out.stderr
    assert out.returncode == 1, shown
    assert "devlint" in shown and "Failed" in shown
    assert "bad.py:3:5: DEV201 [*]" in shown
    assert "vendor/third_party.py" not in shown  # --force-exclude keeps the project's exclusions
    assert "clean.py" not in shown and "notes.txt" not in shown


def test_fix_hook_fixes_the_staged_file(user_repo):
    out = pre_commit(user_repo, "run", "devlint-fix", "--all-files", "--hook-stage", "manual")
    assert out.returncode == 1, out.stdout + out.stderr  # pre-commit fails a hook that changed files
    assert (user_repo / "bad.py").read_text() == BAD.replace(DEV201_LINE, "x = x.to('cpu', torch.float16)")
    assert (user_repo / "vendor" / "third_party.py").read_text() == BAD
    git(user_repo, "add", ".")
    again = pre_commit(user_repo, "run", "--all-files")
    assert again.returncode == 0, again.stdout + again.stderr
