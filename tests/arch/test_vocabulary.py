"""One vocabulary: the words an incident's state is written in (its severities, `Ok`, its
progress) are spelled in `kit/vocabulary.py` only, and the names a notification goes out by
in `kit/channels.py` (tests/notify/test_adapters.py checks the delivery tables against it).

Any other module of the package names them through the constants (`CLOSED`, `OK`,
`SEVERITIES`, `SEVERITY_KEYS`...), so a word cannot drift in one place and a comparison
with a value the field never takes (`IncidentStatus == "Closed"`) cannot be written. The
Alembic migrations are history and keep their literals."""

from __future__ import annotations

import ast
from pathlib import Path

from dutyline.kit import vocabulary
from tests.arch.imports import SRC, modules

HOME = "dutyline.kit.vocabulary"
# Title-case words: never a string literal anywhere else.
WORDS = frozenset((*vocabulary.STATUSES, *vocabulary.PROGRESSES))
# The lowercase keys severities are stored under: never `critical` and another of them in one
# literal list, tuple, set or dict (a list of severities, hand-kept; a logger's levels have
# an `info` and a `warning` of their own).
KEYS = frozenset(vocabulary.SEVERITY_KEYS)
WORST_KEY = vocabulary.SEVERITY_KEYS[0]


def _literal_members(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return list(node.elts)
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if k is not None] + list(node.values)
    return []


def _strings(nodes: list[ast.expr]) -> list[str]:
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _other_literal_types(tree: ast.AST) -> set[int]:
    """The constants inside a `Literal[...]` of another vocabulary (a change's status has a
    `Processing` of its own)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                and node.value.id == "Literal"):
            members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if not set(_strings(members)) <= WORDS:
                skipped |= {id(m) for m in members}
    return skipped


def offences(name: str, path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _other_literal_types(tree)
    found: list[str] = []
    for node in sorted(ast.walk(tree), key=lambda n: (getattr(n, "lineno", 0),
                                                        getattr(n, "col_offset", 0))):
        if (isinstance(node, ast.Constant) and node.value in WORDS
                and id(node) not in skipped):
            found.append(f"{name}:{node.lineno} {node.value!r}")
        keys = set(_strings(_literal_members(node))) & KEYS
        if WORST_KEY in keys and len(keys) > 1:
            found.append(f"{name}:{node.lineno} a list of severity keys {sorted(keys)}")
    return found


def test_no_module_spells_the_vocabulary_but_its_own() -> None:
    found = [o for name, path in modules().items() if name != HOME
             for o in offences(name, path)]
    assert found == [], "use the constants of kit/vocabulary.py:\n" + "\n".join(found)


def test_the_check_sees_what_it_is_for(tmp_path: Path) -> None:
    """Each kind of offence is caught (so an empty answer above means none is there)."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        'closed = progress == "Closed"\n'
        'KEYS = ("critical", "warning", "info")\n'
        'by = {"critical": a, "info": b}\n'
        'Change = Literal["Planned", "Processing", "Done"]\n'
        'LEVELS = {"debug": 10, "info": 20, "warning": 30}\n', encoding="utf-8")
    assert offences("sample", sample) == [
        "sample:1 'Closed'",
        "sample:2 a list of severity keys ['critical', 'info', 'warning']",
        "sample:3 a list of severity keys ['critical', 'info']",
    ]
    assert str(SRC).endswith("dutyline")
