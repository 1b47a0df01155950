"""The command line: `devlint [check] [PATHS...]`, `devlint rules`, `devlint rule CODE`.

Exit codes follow ruff: 0 no findings, 1 findings, 2 usage error, unreadable
input or internal error — always with a one-line reason on stderr.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional, Sequence

import click

from . import __version__, config, registry, review
from .cache import FOLDER as CACHE_FOLDER
from .cache import Cache
from .discovery import PathError, discover
from .output import DEFAULT as DEFAULT_FORMAT
from .output import FORMATS, HUMAN as HUMAN_FORMATS
from .output import statistics as stats
from .output.text import Summary
from .runner import Settings, run
from .verify.command import verify_command
from .sources import SourceLines

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
        if not config.is_known_selector(s):
            raise click.UsageError(f"{option}: unknown rule code or prefix '{s}'")


def _color() -> bool:
    """ANSI colour only on a terminal; NO_COLOR and FORCE_COLOR are honoured."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(readable=False))  # an unreadable file is reported, not fatal
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Use this configuration file (a pyproject.toml with [tool.devlint], or a TOML file of the same keys).")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (DEV1, DEV201, ALL); replaces the configuration's selection.")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--per-file-ignores", multiple=True, metavar="GLOB:CODES", help="Disable CODES in files matching GLOB.")
@click.option("--exclude", multiple=True, help="Glob patterns of files and folders to skip (replaces the default list).")
@click.option("--extend-exclude", multiple=True, help="Glob patterns to skip in addition.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None, help="Skip files git ignores (default: on).")
@click.option("--force-exclude/--no-force-exclude", default=None, help="Apply the exclusions to files named on the command line too.")
@click.option(
    "--output-format", "output_format", type=click.Choice(sorted(FORMATS)), default=DEFAULT_FORMAT,
    envvar="DEVLINT_OUTPUT_FORMAT", show_default=True, help="How findings are printed (also DEVLINT_OUTPUT_FORMAT).",
)
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, also apply unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing.")
@click.option("--report-unused-noqa", is_flag=True, help="Report noqa directives that silence nothing (DEV001); --fix removes them.")
@click.option("--diff-against", metavar="REV", help="Report only findings on lines added or changed since git revision REV.")
@click.option("--baseline", type=click.Path(dir_okay=False), help="Ignore the findings recorded in this baseline file.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), help="Record the current findings in this baseline file and exit 0.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="DEVLINT_CACHE_DIR", help="Where the cache lives (default: .devlint_cache/ in the project).")
@click.option("--statistics", is_flag=True, help="Print how many findings each rule made instead of the findings.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores).")
@click.option("--no-prefilter", is_flag=True, hidden=True, help="Parse every file, even those that cannot match.")
def check(
    paths: tuple[str, ...], config_path: Optional[str], select: tuple[str, ...], extend_select: tuple[str, ...],
    ignore: tuple[str, ...], per_file_ignores: tuple[str, ...], exclude: tuple[str, ...], extend_exclude: tuple[str, ...],
    respect_gitignore: Optional[bool], force_exclude: Optional[bool], output_format: str, fix: bool,
    unsafe_fixes: bool, diff: bool, report_unused_noqa: bool, diff_against: Optional[str], baseline: Optional[str],
    write_baseline: Optional[str], no_cache: bool, cache_dir: Optional[str], statistics: bool, exit_zero: bool, jobs: Optional[int],
    no_prefilter: bool,
) -> None:
    """Lint PATHS (default: the current directory)."""
    try:
        cfg = config.resolve(paths, config_path)
    except config.ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    selectors, extra, ignores = _split(select), _split(extend_select), _split(ignore)
    _check_selectors(selectors, "--select")
    _check_selectors(extra, "--extend-select")
    _check_selectors(ignores, "--ignore")
    cli_per_file = []
    for value in per_file_ignores:
        try:
            pattern, codes = config.parse_per_file_ignore(value)
        except ValueError as exc:
            raise click.UsageError(f"--per-file-ignores: {exc}") from None
        _check_selectors(codes, "--per-file-ignores")
        cli_per_file.append((pattern, codes))
    selection = config.selection(cfg, selectors, ignores, extra, cli_per_file)
    file_filter = config.FileFilter.build(
        cfg, _split(exclude) if exclude else None, _split(extend_exclude), respect_gitignore, force_exclude,
    )
    try:
        files = list(discover(paths or ["."], file_filter))
        changes = review.ChangedLines(diff_against, files) if diff_against else None
    except (PathError, review.ReviewError) as exc:
        raise click.UsageError(str(exc)) from None
    if changes is not None:
        files = [f for f in files if changes.touches(f)]
    writes = fix and not diff
    cache = None
    if not (no_cache or writes or diff):
        cache = Cache.open(Path(cache_dir) if cache_dir else cfg.root / CACHE_FOLDER)
    settings = Settings(
        codes=selection.codes, fix=writes, unsafe_fixes=unsafe_fixes, diff=diff, prefilter=not no_prefilter,
        selection=selection, report_unused_noqa=report_unused_noqa, cache=cache,
    )
    results = run(files, settings, jobs)

    diagnostics = sorted((d for r in results for d in r.diagnostics), key=lambda d: d.sort_key())
    errors = [r for r in results if r.error]
    for r in errors:
        click.echo(f"devlint: error: {r.filename}: {r.error}", err=True)
    sources = SourceLines()
    try:
        if changes is not None:
            diagnostics = [d for d in diagnostics if changes.keep(d)]
        if write_baseline:
            n = review.write_baseline(Path(write_baseline), diagnostics, sources)
            click.echo(f"Wrote {n} finding{'s' if n != 1 else ''} to the baseline {write_baseline}.")
            sys.exit(2 if errors else 0)
        if baseline:
            diagnostics = review.apply_baseline(Path(baseline), diagnostics, sources)
    except review.ReviewError as exc:
        raise click.UsageError(str(exc)) from None
    if diff:
        click.echo("".join(r.diff for r in results if r.diff), nl=False)
    summary = Summary(
        files_checked=len(files), fixes_applied=sum(r.fixes_applied for r in results),
        color=output_format == "full" and _color(), rules=tuple(registry.by_code()[c] for c in selection.codes),
        errors=len(errors),
    )
    if statistics and not diff:
        writer = stats.render_json if output_format in ("json", "json-lines") else stats.render
        click.echo(writer(diagnostics, summary), nl=False)
    elif not diff or output_format not in HUMAN_FORMATS:
        writer = FORMATS[output_format]
        out = writer(diagnostics, summary, sources) if output_format == "full" else writer(diagnostics, summary)
        click.echo(out, nl=False, color=summary.color)
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
