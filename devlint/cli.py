"""The command line: `devlint [check] [PATHS...]`, `devlint rules`, `devlint rule CODE`.

Exit codes follow ruff: 0 no findings, 1 findings, 2 usage error, unreadable
input or internal error — always with a one-line reason on stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional, Sequence

import click

from . import __version__, registry
from .discovery import PathError, discover
from .output import FORMATS
from .output.text import Summary
from .runner import Settings, run
from .verify.command import verify_command

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


class DefaultGroup(click.Group):
    """`devlint src/` means `devlint check src/`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="devlint")
def cli() -> None:
    """devlint: find PyTorch device-handling bugs before they ship."""


def _split(values: Sequence[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _check_selectors(selectors: Sequence[str], option: str) -> None:
    for s in selectors:
        if not registry.is_known_selector(s):
            raise click.UsageError(f"{option}: unknown rule code or prefix '{s}'")


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (DEV1, DEV201, ALL).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option(
    "--output-format", "output_format", type=click.Choice(sorted(FORMATS)), default="text",
    envvar="DEVLINT_OUTPUT_FORMAT", show_default=True, help="How findings are printed.",
)
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, also apply unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores).")
@click.option("--no-prefilter", is_flag=True, hidden=True, help="Parse every file, even those that cannot match.")
def check(
    paths: tuple[str, ...], select: tuple[str, ...], ignore: tuple[str, ...], output_format: str,
    fix: bool, unsafe_fixes: bool, diff: bool, exit_zero: bool, jobs: Optional[int], no_prefilter: bool,
) -> None:
    """Lint PATHS (default: the current directory)."""
    selectors, ignores = _split(select) or ["ALL"], _split(ignore)
    _check_selectors(selectors, "--select")
    _check_selectors(ignores, "--ignore")
    rules = registry.select(selectors, ignores)
    try:
        files = list(discover(paths or ["."]))
    except PathError as exc:
        raise click.UsageError(str(exc)) from None
    settings = Settings(
        codes=tuple(r.code for r in rules), fix=fix and not diff, unsafe_fixes=unsafe_fixes,
        diff=diff, prefilter=not no_prefilter,
    )
    results = run(files, settings, jobs)

    diagnostics = sorted((d for r in results for d in r.diagnostics), key=lambda d: d.sort_key())
    errors = [r for r in results if r.error]
    for r in errors:
        click.echo(f"devlint: error: {r.filename}: {r.error}", err=True)
    if diff:
        click.echo("".join(r.diff for r in results if r.diff), nl=False)
    summary = Summary(files_checked=len(files), fixes_applied=sum(r.fixes_applied for r in results))
    if not diff or output_format != "text":
        click.echo(FORMATS[output_format](diagnostics, summary), nl=False)
    if errors:
        sys.exit(2)
    sys.exit(0 if exit_zero or not diagnostics or diff else 1)


@cli.command("rules")
def list_rules() -> None:
    """List every rule."""
    for rule in registry.all_rules():
        fix = {"none": "   ", "safe": "[*]", "unsafe": "[!]"}[rule.fix_availability.value]
        backends = ",".join(rule.claim.backends) if rule.claim else "-"
        click.echo(f"{rule.code}  {fix}  {rule.name:<40} {backends}")


@cli.command("rule")
@click.argument("code")
def show_rule(code: str) -> None:
    """Print a rule's documentation and its fixtures."""
    rule = registry.by_code().get(code.upper())
    if rule is None:
        raise click.UsageError(f"unknown rule code '{code}'")
    click.echo(f"# {rule.name} ({rule.code})\n")
    click.echo(f"Fix: {rule.fix_availability.value}.")
    if rule.claim:
        click.echo(f"Runtime claim ({', '.join(rule.claim.backends)}): {rule.claim.summary}\n")
    click.echo(rule.docs())
    folder = FIXTURES / rule.code
    for name in ("bad.py", "good.py", "fixed.py"):
        path = folder / name
        if path.is_file():
            click.echo(f"\n## Fixture: {name}\n```python\n{path.read_text(encoding='utf-8').rstrip()}\n```")


cli.add_command(verify_command)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """Entry point: click's errors become one line on stderr and exit 2."""
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="devlint", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("devlint: error: aborted", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"devlint: error: {exc.format_message()}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:  # never a traceback
        click.echo(f"devlint: error: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(2)
    sys.exit(0)
