"""The runtime verifier (`devlint verify`): runs each rule's fixtures, a
user's annotated snippets or a whole script in sandboxed child processes on
the device backends this machine has, and reports whether each rule's claim
holds. See docs/verifier.md.

    backends.py  what the machine has (detected in a child process)
    child.py     the supervisor and sandbox on the far side of the process boundary
    sandbox.py   starting supervisors, running snippets a few at a time, cleaning up
    cells.py     prelude + `# %%` cells, `# error:` annotations
    judge.py     what counts as confirmed, and as clean
    verifier.py  cases, runs, and the rule x backend matrix; `--run` on a script
    report.py    text, JSON and Markdown
    command.py   the click command

Nothing here imports torch: only the child processes do.
"""
