"""Product files speak of the product: README.md, docs/, bench/README.md and the comments and
docstrings of src/, bench/ and tests/ say what dutyline does and how to run it, never the
history of how it was built. A session number, an issue number (`issue 9`, `#12`), or a
citation of a document that is not in the repository (`decisions.md`, `DESIGN.md`,
`public-api.md`, `../shared/...`) fails this test, named by file and line; the fact it stood
for belongs in its place. bench/README.md gives each benchmark's current figure, so a dated
run (`2026-11-22`) fails too: dated results belong in git history.

"issue" as an ordinary word ("issue a key") and `#` followed by digits in code (HTML entities,
colours) are not history, and are left alone: Python files are read for their comments and
docstrings (plus, in src/ and bench/, the words of their other strings), markdown in full."""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()

# History in words: wherever prose is read.
WORDS = {
    "a session number": re.compile(r"\bsessions? \d+", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues? #?\d+", re.IGNORECASE),
    "decisions.md": re.compile(r"\bdecisions\.md\b", re.IGNORECASE),
    "DESIGN.md": re.compile(r"\bDESIGN\.md\b"),
    "public-api.md": re.compile(r"\bpublic-api\.md\b", re.IGNORECASE),
    "../shared": re.compile(r"\.\./shared\b"),
}
# `#12` as an issue or pull request reference: not an HTML entity (`&#34;`), not part of a
# word or path, not a 6-digit colour, not a link fragment (`#10-scale-out`).
ISSUE_REF = re.compile(r"(?<![&\w/#])#\d{2,5}(?![\w-])")
DATED_RUN = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")

PROSE = {**WORDS, "an issue reference": ISSUE_REF}
# Most files hold none of these anywhere: they are not tokenized at all.
HINTS = ("session", "issue", "decisions.md", "design.md", "public-api.md", "../shared")
HASH_DIGITS = re.compile(r"#\d\d")


def _may_hold_history(name: str, text: str) -> bool:
    lowered = text.lower()
    return (any(hint in lowered for hint in HINTS) or bool(HASH_DIGITS.search(text))
            or (name == "bench/README.md" and bool(DATED_RUN.search(text))))


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout.decode()
        names = [name for name in out.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        names = []
    if not names:  # not a git checkout (an unpacked sdist): every file under the root
        names = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*") if p.is_file()]
    return sorted(name for name in names if (ROOT / name).is_file())


def _product(name: str) -> bool:
    if name == THIS:
        return False
    if name in ("README.md", "bench/README.md") or name.startswith("docs/"):
        return True
    if name.startswith(("src/", "bench/")):
        return True
    return name.startswith("tests/") and name.endswith(".py")


def _hits(text: str, first_line: int, patterns: dict[str, re.Pattern[str]]
          ) -> Iterator[tuple[int, str, str]]:
    for what, pattern in patterns.items():
        for match in pattern.finditer(text):
            line = first_line + text.count("\n", 0, match.start())
            yield line, what, match.group(0)


def _python(name: str, source: str) -> Iterator[tuple[int, str, str]]:
    """Comments and docstrings (a string that is a statement of its own) with every pattern;
    in src/ and bench/ the other strings with the words too (messages, help texts)."""
    words_in_strings = name.startswith(("src/", "bench/"))
    at_statement_start = True
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield from _hits(tok.string.lstrip("#"), tok.start[0], PROSE)
        elif tok.type == tokenize.STRING:
            if at_statement_start:
                yield from _hits(tok.string, tok.start[0], PROSE)
            elif words_in_strings:
                yield from _hits(tok.string, tok.start[0], WORDS)
        if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING):
            continue
        at_statement_start = tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)


def history_in(name: str, text: str) -> list[str]:
    if not _may_hold_history(name, text):
        return []
    if name.endswith(".py"):
        found = list(_python(name, text))
    elif name.endswith(".md"):
        patterns = dict(PROSE)
        if name == "bench/README.md":
            patterns["a dated run"] = DATED_RUN
        found = list(_hits(text, 1, patterns))
    else:  # templates, message catalogues: `#` and digits are markup there
        found = list(_hits(text, 1, WORDS))
    lines = text.splitlines()
    return [f"{name}:{line}: {what} {quoted!r}: {lines[line - 1].strip()[:100]}"
            for line, what, quoted in sorted(set(found))]


def test_product_files_carry_no_build_history() -> None:
    names = [name for name in _tracked() if _product(name)]
    assert "README.md" in names and any(n.startswith("src/dutyline/") for n in names)
    found: list[str] = []
    for name in names:
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file: no prose
        found += history_in(name, text)
    assert not found, ("history in product files (state the fact instead):\n"
                       + "\n".join(found))


@pytest.mark.parametrize(("name", "text"), [
    ("src/dutyline/x.py", "x = 1  # as session 10 decided\n"),
    ("src/dutyline/x.py", '"""Shapes clients read (issue 9)."""\n'),
    ("tests/x/test_x.py", "def f() -> None:\n    \"\"\"See decisions.md §3.\"\"\"\n"),
    ("bench/x.py", 'HELP = "rules of ../shared/DESIGN.md"\n'),
    ("tests/x/test_x.py", "# fixed in #123\nx = 1\n"),
    ("docs/x.md", "Grouping (see public-api.md).\n"),
    ("README.md", "Fixed in #42.\n"),
    ("bench/README.md", "Run 2026-11-22 01:55 UTC:\n"),
])
def test_each_kind_of_history_is_found(name: str, text: str) -> None:
    assert history_in(name, text)


@pytest.mark.parametrize(("name", "text"), [
    ("src/dutyline/x.py", "# Issue a key to the member; 12 issues of the digest.\nx = 1\n"),
    ("src/dutyline/x.py", 'ENTITIES = {"<": "&#60;", "+": "&#43;"}  # escaped, not #-refs\n'),
    ("src/dutyline/x.py", 'COLOURS = {"Ok": "#008800"}\n'),
    ("tests/x/test_x.py", 'DATA = ["issue 9", "session 2"]  # test data is not prose\n'),
    ("docs/x.md", "See [scale-out](scale-out.md#10-workers); the session cookie lasts 2 h.\n"),
    ("docs/x.md", "An incident opened at 2026-01-05 shows its date.\n"),
    ("src/dutyline/x.html", "<p style=\"color:#57606a\">&#34;</p>\n"),
])
def test_ordinary_words_and_markup_pass(name: str, text: str) -> None:
    assert history_in(name, text) == []
