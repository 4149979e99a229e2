"""bench/ has no import circle either: the harness (bench/harness.py) is what every benchmark
shares and imports none of them; the command and its scenarios (bench/run.py) import the
benchmarks, and nothing imports it."""

from __future__ import annotations

from tests.arch.imports import SRC, cycles, graph

BENCH = SRC.parents[1] / "bench"


def test_no_circle_between_benchmark_modules() -> None:
    edges = graph(BENCH)
    assert {e.source for e in edges} >= {"bench.run", "bench.ingest", "bench.list_http"}
    assert cycles(edges) == []


def test_the_harness_imports_no_benchmark_and_nothing_imports_the_command() -> None:
    edges = graph(BENCH)
    assert [str(e) for e in edges if e.source == "bench.harness"] == []
    assert [str(e) for e in edges if e.target == "bench.run"] == []
