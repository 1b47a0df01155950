"""Running the real `devlint` command in a test, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

# A line each rule family surely reports, with a safe fix (DEV201) and an unsafe one (DEV101).
DEV201_LINE = "x = x.to(torch.float16, 'cpu')"
DEV101_LINE = "y = torch.ones(1).cuda()"
BAD = f"import torch\nx = torch.randn(3)\n{DEV201_LINE}\n"


def devlint(*args: str, cwd: Optional[Path] = None, env: Optional[dict] = None, input: Optional[str] = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("DEVLINT_", "FORCE_COLOR", "NO_COLOR"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "devlint", *args], capture_output=True, text=True, cwd=cwd, env=full_env,
        timeout=300, input=input,
    )


def codes(out: subprocess.CompletedProcess) -> list[tuple[str, int, str]]:
    """(file, row, code) from concise output."""
    found = []
    for line in out.stdout.splitlines():
        parts = line.split(": ", 2)
        if len(parts) >= 2 and parts[1].startswith("DEV"):
            where = parts[0].rsplit(":", 2)
            found.append((where[0], int(where[1]), parts[1].split()[0]))
    return found
