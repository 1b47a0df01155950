"""The per-file cache: same output cached or not, invalidated by content and config, safe to share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_run import BAD, DEV101_LINE, devlint

CACHE = ".devlint_cache"


def entries(root: Path) -> list[Path]:
    return sorted(p for p in (root / CACHE).rglob("*.json"))


def project(root: Path, n: int = 6) -> Path:
    for i in range(n):
        (root / f"m{i}.py").write_text((BAD if i % 2 else f"import torch\n{DEV101_LINE}\n") + f"# file {i}\n")
    (root / "plain.py").write_text("print('nothing to see')\n")
    return root


def test_cache_folder_layout_and_identical_output(tmp_path):
    project(tmp_path)
    devlint("--no-cache", ".", cwd=tmp_path)
    assert not (tmp_path / CACHE).exists()
    for fmt in ("full", "sarif"):
        uncached = devlint("--no-cache", "--output-format", fmt, ".", cwd=tmp_path)
        first = devlint("--output-format", fmt, ".", cwd=tmp_path)
        second = devlint("--output-format", fmt, ".", cwd=tmp_path)
        assert uncached.stdout == first.stdout == second.stdout and second.returncode == 1
    assert (tmp_path / CACHE / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (tmp_path / CACHE / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    # One entry per torch file (files that cannot match are cheaper to check than to look up).
    devlint("--cache-dir", "fresh", ".", cwd=tmp_path)
    assert len(list((tmp_path / "fresh").rglob("*.json"))) == 6


def test_entries_are_keyed_by_content_and_configuration(tmp_path):
    project(tmp_path, 2)
    devlint(".", cwd=tmp_path)
    before = set(entries(tmp_path))
    folders = {p.parent.parent for p in before}  # one per devlint version and source fingerprint
    devlint(".", cwd=tmp_path)
    # Hits: nothing new (unless devlint's own source changed meanwhile, which starts a new folder).
    assert not [p for p in set(entries(tmp_path)) - before if p.parent.parent in folders]
    devlint("--select", "DEV2", ".", cwd=tmp_path)
    devlint("--select", "DEV2", ".", cwd=tmp_path)
    assert len(set(entries(tmp_path)) - before) >= 2  # another rule set, other entries
    (tmp_path / "m1.py").write_text(BAD + "y = x.to(torch.float16, 'cpu')\n")
    out = devlint("--output-format", "concise", "--select", "DEV201", "m1.py", cwd=tmp_path)
    assert "m1.py:4:5: DEV201" in out.stdout  # new content, new result


def test_a_cached_file_reports_under_its_current_name(tmp_path):
    (tmp_path / "a.py").write_text(BAD)
    devlint(".", cwd=tmp_path)
    (tmp_path / "a.py").rename(tmp_path / "b.py")
    out = devlint("--output-format", "concise", ".", cwd=tmp_path)
    assert out.stdout.startswith("b.py:3:5: DEV201")


def test_corrupt_entries_are_misses(tmp_path):
    project(tmp_path, 2)
    expected = devlint("--no-cache", ".", cwd=tmp_path).stdout
    devlint(".", cwd=tmp_path)
    for entry in entries(tmp_path):
        entry.write_text('{"diagnostics": [["trunc')
    assert devlint(".", cwd=tmp_path).stdout == expected


def test_cache_dir_option_and_environment(tmp_path):
    project(tmp_path, 2)
    out = devlint("--cache-dir", "elsewhere", ".", cwd=tmp_path)
    assert out.returncode == 1 and (tmp_path / "elsewhere" / "CACHEDIR.TAG").is_file()
    devlint(".", cwd=tmp_path, env={"DEVLINT_CACHE_DIR": str(tmp_path / "env-cache")})
    assert (tmp_path / "env-cache" / "CACHEDIR.TAG").is_file()


def test_concurrent_processes_share_the_cache(tmp_path):
    project(tmp_path, 30)
    expected = devlint("--no-cache", "--output-format", "json", ".", cwd=tmp_path).stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    procs = [
        subprocess.Popen([sys.executable, "-m", "devlint", "--output-format", "json", "-j", "1", "."],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(out == expected and err == "" for out, err in outs)
    for entry in entries(tmp_path):
        json.loads(entry.read_text())  # every entry whole
    assert not [p for p in (tmp_path / CACHE).rglob(".tmp-*")]
    assert devlint("--output-format", "json", ".", cwd=tmp_path).stdout == expected


def test_entries_of_other_devlint_versions_are_pruned(tmp_path):
    project(tmp_path, 2)
    old = tmp_path / CACHE / "0.0.1-0123456789ab" / "aa"
    old.mkdir(parents=True)
    (old / "entry.json").write_text('{"diagnostics": []}')
    recent = tmp_path / CACHE / "0.0.2-0123456789ab"
    recent.mkdir()
    os.utime(old.parent, (0, 0))
    devlint(".", cwd=tmp_path)
    assert not old.parent.exists() and recent.exists()
