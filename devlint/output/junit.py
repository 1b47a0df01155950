"""`junit`: JUnit XML, a test suite per file and a failed test case per finding
(a passing case when there is nothing to report), as CI systems read it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby
from typing import Sequence

from ..diagnostics import Diagnostic
from .text import Summary


def render(diagnostics: Sequence[Diagnostic], summary: Summary) -> str:
    n = len(diagnostics)
    root = ET.Element("testsuites", name="devlint", tests=str(max(n, 1)), failures=str(n), errors="0")
    if not diagnostics:
        suite = ET.SubElement(root, "testsuite", name="devlint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No problems found", classname="devlint")
    for filename, group in groupby(diagnostics, key=lambda d: d.filename):
        items = list(group)
        suite = ET.SubElement(root, "testsuite", name=filename, tests=str(len(items)), failures=str(len(items)), errors="0")
        for d in items:
            where = f"cell {d.cell}, line {d.start.row}" if d.cell is not None else f"line {d.start.row}"
            case = ET.SubElement(
                suite, "testcase", name=f"devlint.{d.code}", classname=filename,
                file=filename, line=str(d.start.row), column=str(d.start.column),
            )
            failure = ET.SubElement(case, "failure", message=d.message, type=d.code)
            failure.text = f"{where}, col {d.start.column}: {d.code} {d.message}"
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
