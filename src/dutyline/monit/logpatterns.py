"""Log pattern mining: lines that differ only in their variable parts share a signature.

A Drain-like miner (He et al., "Drain: An Online Log Parsing Approach with Fixed Depth
Tree", ICWS 2017), kept small: each line's variable-looking tokens are masked first (IP
addresses, UUIDs, hex ids, numbers, timestamps), then lines are grouped by their token count
and first token, and within a group a line joins the most similar pattern (at least half
its tokens equal, position by position); the positions where members differ become `<*>`.
Pure and bounded (lines, tokens and patterns per group are capped), so it runs in a worker
thread with the scan's own limits."""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field

MAX_LINE_CHARS = 2000
MAX_TOKENS = 64
# Past this many patterns in a group a line joins its most similar one: the work per line
# stays bounded (a group of lines with nothing in common costs 32 comparisons a line).
MAX_PATTERNS_PER_GROUP = 32
SIMILARITY = 0.5
# Token comparisons one mining may spend (a few seconds of CPU): lines that share nothing
# would otherwise cost every pattern of their group each. Past it the rest is not mined.
MAX_WORK = 16_000_000
WILDCARD = "<*>"
SAMPLE_CHARS = 500

# Most specific first: a UUID is also hex, an address also numbers.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
     "<TS>"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                r"[0-9a-fA-F]{12}\b"), "<UUID>"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b"), "<IP>"),
    (re.compile(r"\b(?:[0-9a-fA-F]{1,4}:){3,7}[0-9a-fA-F]{1,4}\b"), "<IP>"),
    (re.compile(r"\b0[xX][0-9a-fA-F]+\b"), "<HEX>"),
    # A run of 8+ hex digits with at least one digit and one letter: a hash, a span id.
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b"), "<HEX>"),
    (re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?:ms|us|ns|s|m|h|b|kb|mb|gb|"
                r"KB|MB|GB|KiB|MiB|GiB|%)?(?![\w.])"), "<NUM>"),
)
# Tokens that still hold digits after the masks (`user42`, `req-8812`): identifiers.
_ID_WITH_DIGITS = re.compile(r"^(?=.*\d)[\w.:/-]+$")


def mask(line: str) -> list[str]:
    """The line's tokens with their variable parts masked."""
    text = line[:MAX_LINE_CHARS]
    for pattern, token in _MASKS:
        text = pattern.sub(token, text)
    tokens = text.split()
    if len(tokens) > MAX_TOKENS:
        tokens = [*tokens[:MAX_TOKENS - 1], WILDCARD]
    return ["<ID>" if _ID_WITH_DIGITS.match(t) and not t.startswith("<") else t
            for t in tokens]


@dataclass
class Pattern:
    tokens: list[str]
    count: int
    first_seen: float
    sample: str
    wildcards: int = 0  # how many of `tokens` are WILDCARD

    @property
    def signature(self) -> str:
        return " ".join(self.tokens)


@dataclass
class Miner:
    groups: dict[tuple[int, str], list[Pattern]] = field(default_factory=dict)
    lines: int = 0
    work: int = 0  # token comparisons so far

    def add(self, line: str, at_s: float) -> None:
        tokens = mask(line)
        if not tokens:
            return
        self.lines += 1
        first = tokens[0] if not tokens[0].startswith("<") else WILDCARD
        group = self.groups.setdefault((len(tokens), first), [])
        self.work += len(group) * len(tokens)
        best, best_score = None, -1.0
        for pattern in group:
            score = _similarity(pattern, tokens)
            if score > best_score:
                best, best_score = pattern, score
        if best is not None and (best_score >= SIMILARITY or
                                 len(group) >= MAX_PATTERNS_PER_GROUP):
            best.tokens = [a if a == b else WILDCARD for a, b in zip(best.tokens, tokens,
                                                                      strict=True)]
            best.wildcards = best.tokens.count(WILDCARD)
            best.count += 1
            if at_s < best.first_seen:
                best.first_seen = at_s
            return
        group.append(Pattern(tokens, 1, at_s, line[:SAMPLE_CHARS]))

    def patterns(self) -> list[Pattern]:
        """Most frequent first; ties: the earliest first."""
        found = [p for group in self.groups.values() for p in group]
        return sorted(found, key=lambda p: (-p.count, p.first_seen, p.signature))


def _similarity(pattern: Pattern, tokens: list[str]) -> float:
    """The share of positions where the pattern already agrees (a wildcard agrees). Counted
    in C (map over operator.eq): this is the miner's inner loop."""
    same: int = sum(map(operator.eq, pattern.tokens, tokens)) + pattern.wildcards
    return min(same, len(tokens)) / len(tokens)


@dataclass(frozen=True)
class Mined:
    patterns: list[Pattern]
    lines: int  # how many of the lines were mined before the work ran out
    complete: bool


def mine(lines: list[tuple[float, str]], max_work: int = MAX_WORK) -> Mined:
    miner = Miner()
    for n, (at_s, line) in enumerate(lines):
        if miner.work > max_work:
            return Mined(miner.patterns(), n, False)
        miner.add(line, at_s)
    return Mined(miner.patterns(), len(lines), True)
