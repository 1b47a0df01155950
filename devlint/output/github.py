"""`github`: GitHub Actions workflow commands, one annotation a finding:
`::error file=F,line=L,col=C,endLine=L,endColumn=C,title=T::message`.

A notebook's rows are cell-relative, which the annotation cannot express: its
findings annotate the file, with the cell and row in the message."""

from __future__ import annotations

from typing import Sequence

from ..diagnostics import Diagnostic
from .text import location


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(d: Diagnostic) -> str:
    props = [f"file={_property(d.filename)}"]
    if d.cell is None:
        props += [f"line={d.start.row}", f"col={d.start.column}", f"endLine={d.end.row}", f"endColumn={d.end.column}"]
    props.append(f"title={_property(f'devlint ({d.code})')}")
    mark = " [*]" if d.fix is not None else ""
    return f"::error {','.join(props)}::{_data(f'{location(d)}: {d.code}{mark} {d.message}')}"


def render(diagnostics: Sequence[Diagnostic], summary: object = None) -> str:
    return "".join(annotation(d) + "\n" for d in diagnostics)
