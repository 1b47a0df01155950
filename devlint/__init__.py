"""devlint: a static linter for PyTorch device-handling bugs."""

__version__ = "0.1.0"
