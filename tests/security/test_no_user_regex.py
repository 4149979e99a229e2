"""No input reaches Python's backtracking `re` (docs/architecture.md, rule 3 of the design).

Every call into `re` that takes a pattern (`re.compile`, `re.search`, `re.sub`...) must get
one fixed when the module is written: a literal, or an expression of literals and of
module-level constants built from literals. That is decided by construction from the source
(ast), with no list of exceptions: a pattern that comes from anywhere else, a request, a
record, a function's argument, fails this test, and belongs to RE2 (`re2`, linear time, as
kit/filters uses it) or to a substring search.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "dutyline"
PATTERN_FUNCTIONS = frozenset({"compile", "search", "match", "fullmatch", "sub", "subn",
                               "split", "findall", "finditer"})
# Calls of a constant that give a constant (`re.escape(...)`, `"|".join(...)`...).
PURE_METHODS = frozenset({"join", "escape", "format", "lower", "upper", "replace", "strip"})
PURE_BUILTINS = frozenset({"sorted", "tuple", "frozenset", "set", "list", "str", "len"})


@dataclass
class Module:
    path: Path
    tree: ast.Module
    re_aliases: set[str] = field(default_factory=set)  # names bound to the `re` module
    re_functions: dict[str, str] = field(default_factory=dict)  # `from re import x as y`
    constants: set[str] = field(default_factory=set)


def _assigned_names(tree: ast.AST) -> dict[str, int]:
    """How many times each name is bound anywhere in the module."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.comprehension):
            targets = [node.target]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for a in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
                counts[a.arg] = counts.get(a.arg, 0) + 1
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    counts[n.id] = counts.get(n.id, 0) + 1
    return counts


class Constness:
    def __init__(self, module: Module, local: frozenset[str] = frozenset()) -> None:
        self.module = module
        self.local = local  # comprehension variables over constants

    def __call__(self, node: ast.AST) -> bool:
        m = self.module
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):
            return node.id in m.constants or node.id in self.local
        if isinstance(node, ast.BinOp):
            return self(node.left) and self(node.right)
        if isinstance(node, ast.JoinedStr):
            return all(self(v) for v in node.values)
        if isinstance(node, ast.FormattedValue):
            return self(node.value)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return all(self(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(k is None or self(k) for k in node.keys) and all(
                self(v) for v in node.values)
        if isinstance(node, ast.Subscript):
            return self(node.value) and self(node.slice)
        if isinstance(node, ast.Attribute):
            # a flag (`re.I`), or the source of a compiled constant pattern (`WINDOW.pattern`)
            return _is_re(m, node.value) or (node.attr == "pattern" and self(node.value))
        if isinstance(node, ast.GeneratorExp | ast.ListComp | ast.SetComp):
            names = {n.id for g in node.generators for n in ast.walk(g.target)
                     if isinstance(n, ast.Name)}
            inner = Constness(m, self.local | names)
            return all(self(g.iter) and all(inner(c) for c in g.ifs)
                       for g in node.generators) and inner(node.elt)
        if isinstance(node, ast.Call):
            f = node.func
            args_const = all(self(a) for a in node.args) and all(
                self(k.value) for k in node.keywords)
            if isinstance(f, ast.Attribute) and f.attr in PURE_METHODS:
                return args_const and (self(f.value) or _is_re(m, f.value))
            if isinstance(f, ast.Attribute) and f.attr == "compile" and _is_re(m, f.value):
                return args_const
            if isinstance(f, ast.Name) and f.id in PURE_BUILTINS:
                return args_const
        return False


def _is_re(module: Module, node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in module.re_aliases


def load(path: Path) -> Module:
    tree = ast.parse(path.read_text(), str(path))
    module = Module(path, tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "re":
                    module.re_aliases.add(a.asname or "re")
        elif isinstance(node, ast.ImportFrom) and node.module == "re" and not node.level:
            for a in node.names:
                module.re_functions[a.asname or a.name] = a.name
    counts = _assigned_names(tree)
    # Module-level names bound once, to a constant expression: found in source order, so a
    # constant may be built from the ones above it.
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and counts.get(target.id) == 1 \
                and Constness(module)(value):
            module.constants.add(target.id)
    return module


def pattern_calls(module: Module) -> list[tuple[int, str, ast.expr | None]]:
    """Every call into `re` that takes a pattern: (line, function, the pattern argument)."""
    found: list[tuple[int, str, ast.expr | None]] = []
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = None
        if isinstance(f, ast.Attribute) and _is_re(module, f.value) \
                and f.attr in PATTERN_FUNCTIONS:
            name = f.attr
        elif isinstance(f, ast.Name) and module.re_functions.get(f.id) in PATTERN_FUNCTIONS:
            name = module.re_functions[f.id]
        if name is None:
            continue
        pattern = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "pattern"), None)
        found.append((node.lineno, name, pattern))
    return found


def offenders(path: Path) -> list[str]:
    module = load(path)
    const = Constness(module)
    out = []
    for line, name, pattern in pattern_calls(module):
        if pattern is None or not const(pattern):
            shown = ast.unparse(pattern) if pattern is not None else "?"
            out.append(f"{path.relative_to(SRC.parent)}:{line}: re.{name}({shown}, ...)")
    return out


def test_no_call_into_re_takes_a_pattern_built_at_run_time() -> None:
    found = [o for path in sorted(SRC.rglob("*.py")) for o in offenders(path)]
    assert found == [], "patterns not fixed in the source (use re2 or a substring):\n" \
        + "\n".join(found)


def _refused(src: str, tmp_path: Path) -> list[str]:
    path = tmp_path / "probe.py"
    path.write_text(src)
    module = load(path)
    const = Constness(module)
    return [name for _line, name, p in pattern_calls(module) if p is None or not const(p)]


REFUSED = {
    "an argument": "import re\ndef f(q, s):\n    return re.search(q, s)\n",
    "built from an argument": "import re\ndef f(q):\n    return re.compile('^' + q, re.I)\n",
    "a keyword": "import re\ndef f(q):\n    return re.match(pattern=q, string='x')\n",
    "an alias": "import re as regex\ndef f(q):\n    return regex.sub(q, '', 'x')\n",
    "an imported function": "from re import compile as c\ndef f(q):\n    return c(q)\n",
    "a rebound constant": "import re\nP = 'a'\ndef f(q):\n    global P\n    P = q\n"
                         "    return re.compile(P)\n",
    "a record's field": "import re\ndef f(spec):\n    return re.search(spec['pattern'], 'x')\n",
    "an attribute": "import re\ndef f(ctx):\n    return re.compile('</' + ctx.element)\n",
}
ALLOWED = {
    "a literal": "import re\nX = re.compile(r'a+', re.I)\n",
    "a constant": "import re\nP = r'a+'\nQ = P + '$'\ndef f(s):\n    return re.sub(Q, '', s)\n",
    "an escaped join": "import re\nW = ('a', 'b')\n"
                      "X = re.compile('|'.join(re.escape(w) for w in W))\n",
    "a compiled pattern's source": "import re\nA = re.compile('a')\n"
                                   "B = re.compile(f'({A.pattern})+')\n",
}


@pytest.mark.parametrize("src", REFUSED.values(), ids=REFUSED.keys())
def test_a_pattern_from_anywhere_else_is_refused(src: str, tmp_path: Path) -> None:
    assert _refused(src, tmp_path)


@pytest.mark.parametrize("src", ALLOWED.values(), ids=ALLOWED.keys())
def test_a_pattern_fixed_in_the_source_is_allowed(src: str, tmp_path: Path) -> None:
    assert _refused(src, tmp_path) == []
