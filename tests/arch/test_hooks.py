"""The run-time hooks by which a lower domain calls a higher one are declared in domains.py,
beside the domains' routers and task modules, and nowhere else: with the imports, that file
is the whole dependency graph (docs/architecture.md).

Each hook's offer belongs to a domain below the one that answers it, both resolve, the
answer is the declaring domain's own, and no other module registers with an offer."""

from __future__ import annotations

import ast
import inspect

from dutyline import domains
from dutyline.api.runtime import Runtime
from dutyline.config import Settings
from tests.arch.imports import modules
from tests.arch.test_layering import LAYERS


def _package(ref: str) -> str:
    return ref.split(":")[0].split(".")[1]


def test_every_hook_goes_from_a_lower_domain_to_the_one_declaring_it() -> None:
    assert len(domains.hooks()) >= 7
    for domain in domains.DOMAINS:
        for hook in domain.hooks:
            assert _package(hook.answer) == domain.name, hook
            assert callable(domains._resolve(hook.answer)), hook
            if hook.offer.startswith(domains.RUNTIME):
                field = hook.offer.removeprefix(domains.RUNTIME)
                assert field in inspect.signature(Runtime).parameters, hook
                continue
            assert callable(domains._resolve(hook.offer)), hook
            assert LAYERS.index(_package(hook.offer)) < LAYERS.index(domain.name), hook


def test_no_module_but_domains_registers_with_an_offer() -> None:
    offered = [tuple(h.offer.split(":")) for h in domains.hooks()
               if not h.offer.startswith(domains.RUNTIME)]
    found = []
    for name, path in modules().items():
        if name == "dutyline.domains":
            continue
        others = {offer for home, offer in offered if home != name}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute | ast.Name):
                used = node.attr if isinstance(node, ast.Attribute) else node.id
                if used in others:
                    found.append(f"{name}:{node.lineno} {used}")
    assert found == []


def test_the_hooks_are_registered_once_whatever_the_number_of_starts() -> None:
    from dutyline.channel.noise import service as noise
    from dutyline.platform.calendar import service as calendars

    domains.load_tasks()
    domains.load_tasks()
    assert len(calendars._users) == 3 and len(calendars._watchers) == 1
    assert len(noise._inhibit_indexers) == 1 and len(noise._incident_checks) == 1
    bound = domains.runtime_hooks(Settings.from_env({}))
    assert set(bound) == {"reach_gap"}
    assert bound["reach_gap"]("email") == bound["reach_gap"]("email")
