"""The layering of the package (docs/architecture.md), checked on every run over every import
statement (function-level and TYPE_CHECKING ones included, tests/arch/imports.py):

- the packages form layers: infrastructure (`kit`, `config`, `db`, `api`, `work`), then the
  domains in a fixed order, then the composition root (domains.py, app.py, doctor.py, cli.py); a
  package imports only packages below it, so no circle between packages exists;
- no circle between modules, inside a package or across;
- a domain reaches another only through its `service` modules, and through the one facade
  of a domain that has one (`incident/service.py`);
- a domain reads another domain's tables only as a declared read model, read-only;
- a service function takes domain arguments, never a wire request struct;
- a service function takes what it needs of the process (secret box, outbound policy, base
  URL, settings) as one `deps` argument (api/deps.py), never one by one.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from dutyline.api.actor import Actor
from tests.arch.imports import SRC, Edge, cycles, graph, imports_of, modules

# Lowest first. A package may import only packages before it in this list.
INFRA = ("kit", "config", "db", "api", "work", "command_settings")
DOMAINS = ("platform", "channel", "enrichment", "incident", "insight", "monit", "aisre",
           "notify", "schedule", "dispatch", "status_page", "web")
ROOT = ("domains", "app", "doctor", "ops_cli", "cli", "__main__")
LAYERS = INFRA + DOMAINS + ROOT

# Domains with one facade module: other domains import that module and nothing else of them.
# The others publish the `service` module of each of their sub-packages.
FACADES = {"incident": "dutyline.incident.service"}

# Which domain owns each table module (db/tables/<module>.py).
TABLE_OWNERS = {
    "aisre": "aisre", "automation": "aisre", "runner": "aisre",
    "channel": "channel", "channel_noise": "channel",
    "dispatch": "dispatch", "enrichment": "enrichment",
    "incident": "incident", "incident_change": "incident", "incident_insight": "incident",
    "incident_noise": "incident", "incident_postmortem": "incident",
    "monit": "monit", "notify": "notify", "notify_war_room": "notify", "platform": "platform",
    "platform_calendar": "platform", "schedule": "schedule",
    "status_page": "status_page", "scheduler": "work", "work": "work", "meta": "db",
    "signals": "db",
    "web": "web",
}
# Read models: another domain's tables a module may join, read-only (docs/architecture.md).
# A page of incidents shows its channel's and integration's names and its people without a
# service call per row, so the incident queries join these tables directly.
READ_MODELS = {
    "dutyline.incident.query.repository": {"channel", "integration", "account", "member"},
    "dutyline.incident.analytics.repository": {"channel", "notify_delivery"},
}

# Public service functions `(conn, actor, ...)` that still take a wire request struct: none.
# An entry here would be one to give domain arguments, then strike (a stale entry fails).
REQUEST_ARGUMENTS: set[str] = set()

# What services need of the process travels as one `deps` argument (api/deps.py): a service
# parameter of one of these names is refused.
PROCESS_DEPENDENCIES = frozenset({"secrets", "box", "policy", "base_url", "settings"})


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""  # "": the package's own __init__


def layer_violations(edges: list[Edge]) -> list[str]:
    found = []
    for e in edges:
        source, target = _package(e.source), _package(e.target)
        if source == target or "" in (source, target):
            continue  # the package's own __init__ (its version) sits beside every layer
        if source not in LAYERS or target not in LAYERS:
            found.append(f"{e} (a package not in LAYERS)")
        elif LAYERS.index(target) > LAYERS.index(source):
            found.append(f"{e} ({target} is above {source})")
    return sorted(found)


def facade_violations(edges: list[Edge]) -> list[str]:
    found = []
    for e in edges:
        source, target = _package(e.source), _package(e.target)
        if source == target or source not in DOMAINS or target not in DOMAINS:
            continue
        facade = FACADES.get(target)
        if e.target != facade if facade else e.target.rpartition(".")[2] != "service":
            found.append(str(e))
    return sorted(found)


def test_packages_import_only_the_layers_below_them() -> None:
    assert layer_violations(graph()) == []


def test_no_circle_between_modules() -> None:
    assert cycles(graph()) == []


def test_domains_meet_only_through_their_services() -> None:
    assert facade_violations(graph()) == []


def test_the_checks_see_function_level_imports_and_circles(tmp_path: Path) -> None:
    """The checks are not vacuous: a circle made by an import inside a function, a lower
    package importing a higher one, and a bypassed facade are each caught."""
    root = tmp_path / "dutyline"
    for pkg in ("channel", "incident", "kit"):
        (root / pkg).mkdir(parents=True)
        (root / pkg / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "channel" / "service.py").write_text(
        "def f():\n    from dutyline.incident.ingest import service\n")
    (root / "incident" / "ingest").mkdir()
    (root / "incident" / "ingest" / "__init__.py").write_text("")
    (root / "incident" / "ingest" / "service.py").write_text(
        "from dutyline.channel import service\nfrom ..service import x\n")
    (root / "incident" / "service.py").write_text("x = 1\n")
    (root / "kit" / "clock.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from dutyline.channel.service import f\n")
    edges = graph(root)
    assert {str(e) for e in edges} == {
        "dutyline.channel.service:2 -> dutyline.incident.ingest.service",
        "dutyline.incident.ingest.service:1 -> dutyline.channel.service",
        "dutyline.incident.ingest.service:2 -> dutyline.incident.service",
        "dutyline.kit.clock:3 -> dutyline.channel.service",
    }
    assert cycles(edges) == [["dutyline.channel.service", "dutyline.incident.ingest.service"]]
    assert layer_violations(edges) == [
        "dutyline.channel.service:2 -> dutyline.incident.ingest.service "
        "(incident is above channel)",
        "dutyline.kit.clock:3 -> dutyline.channel.service (channel is above kit)",
    ]
    assert facade_violations(edges) == [
        "dutyline.channel.service:2 -> dutyline.incident.ingest.service"]


# --- tables ---------------------------------------------------------------------------------

_WRITES = {"insert", "update", "delete", "insert_for"}


def _table_uses(path: Path, module: str) -> list[tuple[str, str, int]]:
    """(table module, table name, line) of every table a module imports by name."""
    uses = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "dutyline.db.tables."):
            table_module = (node.module or "").split(".")[3]
            uses += [(table_module, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module == "dutyline.db.tables":
            uses += [(a.name, "*", node.lineno) for a in node.names if a.name != "metadata"]
    return uses


def _written_names(path: Path) -> set[str]:
    """Names passed to insert()/update()/delete() or called `.insert()`... on."""
    written = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (isinstance(func, ast.Name) and func.id in _WRITES and node.args
                and isinstance(node.args[0], ast.Name)):
            written.add(node.args[0].id)
        elif (isinstance(func, ast.Attribute) and func.attr in _WRITES
              and isinstance(func.value, ast.Name)):
            written.add(func.value.id)
    return written


def table_violations(root: Path = SRC) -> list[str]:
    found = []
    for module, path in modules(root).items():
        owner = _package(module)
        if owner in INFRA or owner in ROOT or owner == "":
            continue
        allowed = READ_MODELS.get(module, set())
        written = _written_names(path)
        for table_module, table, line in _table_uses(path, module):
            table_owner = TABLE_OWNERS.get(table_module)
            if table_owner is None:
                found.append(f"{module}:{line} db/tables/{table_module}.py has no owner")
            elif table_owner == owner:
                continue
            elif table not in allowed:
                found.append(f"{module}:{line} uses {table_owner}'s table {table}")
            elif table in written:
                found.append(f"{module}: writes the read model {table}")
    return sorted(found)


def test_every_table_module_has_an_owner() -> None:
    on_disk = {p.stem for p in (SRC / "db" / "tables").glob("*.py")} - {"__init__"}
    assert on_disk == set(TABLE_OWNERS)


def test_domains_use_other_domains_tables_only_as_declared_read_models() -> None:
    assert table_violations() == []


def test_the_table_check_sees_an_undeclared_use_and_a_write(tmp_path: Path) -> None:
    root = tmp_path / "dutyline"
    (root / "incident" / "query").mkdir(parents=True)
    (root / "notify").mkdir()
    (root / "incident" / "query" / "repository.py").write_text(
        "from dutyline.db.tables.channel import channel, integration\n"
        "def f():\n    return insert(channel)\n")
    (root / "notify" / "repository.py").write_text(
        "from dutyline.db.tables.dispatch import escalate_rule\n")
    assert table_violations(root) == [
        "dutyline.incident.query.repository: writes the read model channel",
        "dutyline.notify.repository:1 uses dispatch's table escalate_rule",
    ]


# --- service arguments ----------------------------------------------------------------------

def _request_structs(module: object, annotations: dict[str, object]) -> list[str]:
    text = " ".join(str(v) for k, v in annotations.items() if k != "return")
    found = []
    for name in re.findall(r"\b(\w+Request)\b", text):
        value = getattr(module, name, None)
        if isinstance(value, type) and issubclass(value, msgspec.Struct):
            found.append(name)
    return found


def _is_service(fn: Callable[..., Any]) -> bool:
    """A function taking a connection and an actor: `(conn, actor, ...)`, and also the
    shapes that thread something between them (`(conn, box, actor, ...)`)."""
    return {"conn", "actor"} <= set(list(inspect.signature(fn).parameters)[:3])


def service_functions() -> Iterator[tuple[str, Any, Any]]:
    """(qualified name, module, function) of every public service function of the
    domains, the services' own modules and their engines alike."""
    for name, path in modules().items():
        package = _package(name)
        if package not in DOMAINS or path.stem in {"endpoints", "schemas", "__init__"}:
            continue
        module = importlib.import_module(name)
        for attr, fn in vars(module).items():
            if attr.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != name:
                continue
            if _is_service(fn):
                yield f"{name}.{attr}", module, fn


def services_taking_requests() -> set[str]:
    """Public `(conn, actor, ...)` functions of the domains whose arguments name a wire
    request struct (a msgspec Struct whose name ends in `Request`)."""
    return {name for name, module, fn in service_functions()
            if _request_structs(module, fn.__annotations__)}


def _process_dependencies(fn: Callable[..., Any]) -> list[str]:
    return sorted(set(inspect.signature(fn).parameters) & PROCESS_DEPENDENCIES)


def test_services_take_the_process_dependencies_as_one_argument() -> None:
    found = {name: taken for name, _, fn in service_functions()
             if (taken := _process_dependencies(fn))}
    assert found == {}, "pass `deps: Deps` (api/deps.py) instead"


def test_the_dependency_check_sees_the_services_and_their_parameters() -> None:
    """The check is not vacuous: it walks the services that take `deps` (keyword or
    not, between conn and actor or after them) and refuses each parameter by name."""
    seen = {name: fn for name, _, fn in service_functions()}
    taking_deps = {n for n, fn in seen.items() if "deps" in inspect.signature(fn).parameters}
    assert {"dutyline.monit.datasources.create_datasource",
            "dutyline.aisre.mcp.service.enabled_targets",
            "dutyline.incident.query.service.list_incidents",
            "dutyline.schedule.feed.create_feed",
            "dutyline.platform.audit.service.search_sync"} <= taking_deps
    assert len(seen) > 200

    async def positional(conn: Any, actor: Actor, box: Any, *, ds_id: int) -> None: ...
    async def threaded(conn: Any, runtime: Any, actor: Actor, *, team_ids: list[int]) -> None:
        ...
    async def one_by_one(conn: Any, actor: Actor, *, secrets: Any, policy: Any,
                         base_url: str, settings: Any) -> None: ...
    async def helper(row: Any, box: Any) -> None: ...

    assert _is_service(positional) and _process_dependencies(positional) == ["box"]
    assert _is_service(threaded)
    assert _process_dependencies(one_by_one) == ["base_url", "policy", "secrets", "settings"]
    assert not _is_service(helper)


def test_service_functions_take_domain_arguments_not_wire_requests() -> None:
    found = services_taking_requests()
    assert sorted(found - REQUEST_ARGUMENTS) == [], "a new service takes a wire request"
    assert sorted(REQUEST_ARGUMENTS - found) == [], "fixed: strike it from REQUEST_ARGUMENTS"


def test_the_request_check_sees_a_request_struct() -> None:
    class ThingCreateRequest(msgspec.Struct):
        name: str

    namespace = type("M", (), {"ThingCreateRequest": ThingCreateRequest})
    assert _request_structs(namespace, {"req": "ThingCreateRequest | None",
                                        "return": "ThingCreateRequest"}) == [
        "ThingCreateRequest"]
    assert _request_structs(namespace, {"name": "str"}) == []


def test_the_graph_resolves_imported_modules() -> None:
    """`from pkg import mod` is an import of pkg.mod, `from pkg.mod import name` of pkg.mod."""
    known = modules()
    edges = imports_of("dutyline.incident.service", known["dutyline.incident.service"], known)
    targets = {e.target for e in edges}
    assert {"dutyline.incident.query.service", "dutyline.incident.events"} <= targets
    assert "dutyline.incident.events.IncidentEvent" not in targets
