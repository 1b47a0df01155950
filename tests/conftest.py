import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_addoption(parser):
    parser.addoption(
        "--fuzz-long", action="store_true", default=False,
        help="run the long fuzzing profile of tests/test_fuzz.py (several minutes; same as DEVLINT_FUZZ_LONG=1)",
    )


def pytest_configure(config):
    import os

    if config.getoption("--fuzz-long"):
        os.environ["DEVLINT_FUZZ_LONG"] = "1"


# tests/data holds inputs (a slice of real projects' code among them), never tests.
collect_ignore_glob = ["data/*"]
