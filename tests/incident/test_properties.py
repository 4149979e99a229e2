"""Property test of the incident lifecycle: hypothesis drives random sequences of create, ack,
unack, resolve, reopen, snooze, wake, merge and alert merge through the HTTP API, the same
transitions through the console's incident page and a notification's signed links, alert
pushes (ingestion) and clock ticks (the auto-resolve timer), and after every step checks:

- the call succeeded exactly when every named incident was in a state the transition accepts,
  and a refused call changed nothing at all (incidents, feed, events);
- a closed incident has no active alert, whoever closed it;
- every close emitted exactly one `resolved` event, however it closed (by hand, by its
  alerts' recovery or the timeout, by a merge, emptied by an alert merge): an incident's
  `resolved` events are its `reopened` ones, plus one while it is Closed;
- progress is valid; close fields are set only, and always, when Closed; a closed incident,
  however it closed (by hand, by its alerts' recovery, by a merge), is not snoozed; a merged
  incident is Closed; Processing means acknowledged (ack_time set) and open;
- while open, an incident opened by its alerts has the severity of its worst active alert
  (one whose severity a person set, by creating, reopening or merging into it, only keeps
  its status equal to its severity);
- alert counts equal what the incident's alerts say;
- every change left a feed entry and an event.

SQLite only (the transitions' SQL is covered on both backends by the other tests); bounded
and derandomized so CI runs are stable."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import msgspec
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from sqlalchemy import case, func, select

import dutyline.incident.ingest.tasks  # noqa: F401  (registers the auto-resolve timer)
from dutyline.config import Settings
from dutyline.db.tables.incident import alert, incident, incident_event, incident_feed
from dutyline.dispatch import links
from dutyline.kit.vocabulary import SEVERITY_RANK
from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person, new_account
from tests.fixtures.api import Api, make_api
from tests.fixtures.clock import FakeClock
from tests.fixtures.console import signed_in

T = TypeVar("T")
PUSH_PATH = "/event/push/alert/standard"
RUN = settings(max_examples=20, stateful_step_count=40, deadline=None, derandomize=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# What a reason can hold: the API refuses NUL and lone surrogates (tested on their own).
_storable_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                         max_size=20)
_indexes = st.lists(st.integers(0, 1000), min_size=1, max_size=3)
# Alert keys and the service each belongs to (the channel groups by service).
_SERVICE = {"k1": "api", "k2": "api", "k3": "db"}
_keys = st.sampled_from(sorted(_SERVICE))
# Whether an incident (its row) is in a state each transition accepts, at `now`: written here
# on its own, not read from incident/state, so the test checks the machine against the rules.
_ACCEPTS = {
    "ack": lambda r, now: r["progress"] == "Triggered",
    "unack": lambda r, now: r["progress"] == "Processing",
    "resolve": lambda r, now: r["progress"] != "Closed",
    "reopen": lambda r, now: r["progress"] == "Closed",
    "snooze": lambda r, now: r["progress"] != "Closed",
    "wake": lambda r, now: r["snoozed_before"] > now,
}
# The console's form of each, and the statuses that say done and refused for each way in.
_FORMS: dict[str, dict[str, str]] = {"reopen": {"reason": "back"}, "snooze": {"minutes": "30"}}
_DONE_REFUSED = {"api": (200, 400), "console": (303, 400), "link": (200, 409)}


class _World:
    """The app on its own event loop, shared by every example; each example gets an account
    of its own, so examples never see each other's incidents."""

    def __init__(self, app_settings: Settings) -> None:
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock(1_700_000_000)
        self._cm = make_api(app_settings, clock=self.clock)
        self.api: Api = self.run(self._cm.__aenter__())

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.run(self._cm.__aexit__(None, None, None))
        self.loop.close()


def _machine(world: _World) -> type[RuleBasedStateMachine]:
    api = world.api

    class IncidentLifecycle(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.owner: Person = world.run(new_account(api, "Prop"))
            # Alerts of one service share an incident, so severities are recomputed as
            # alerts of mixed severities fire and recover.
            channel = world.run(api.call("/channel/create", {
                "channel_name": "Prop", "group": {"method": "p", "equals": [["svc"]]},
                "auto_resolve_timeout": 3600},
                key=self.owner.key))
            assert channel.status == 200, channel.body
            integ = world.run(api.call("/integration/create", {
                "channel_id": channel.data["channel_id"], "integration_name": "std"},
                key=self.owner.key))
            assert integ.status == 200, integ.body
            self.integration_key: str = integ.data["integration_key"]
            # Incidents whose severity a person set (not only their alerts).
            self.hand_set: set[str] = set()
            self.link_key: str = world.run(links.server_key(api.runtime.settings))

        # -- reading the account's state straight from the database ----------------------
        def snapshot(self) -> dict[str, dict[str, Any]]:
            async def read() -> dict[str, dict[str, Any]]:
                async with api.runtime.db.transaction(write=False) as conn:
                    rows = await conn.execute(select(incident).where(
                        incident.c.account_id == self.owner.account_id,
                        incident.c.deleted_at == 0).order_by(incident.c.created_at,
                                                             incident.c.incident_id))
                    return {r.incident_id: dict(r._mapping) for r in rows}
            return world.run(read())

        def totals(self) -> tuple[dict[str, int], dict[str, int]]:
            async def read() -> tuple[dict[str, int], dict[str, int]]:
                async with api.runtime.db.transaction(write=False) as conn:
                    feeds = await conn.execute(
                        select(incident_feed.c.incident_id, func.count())
                        .where(incident_feed.c.account_id == self.owner.account_id)
                        .group_by(incident_feed.c.incident_id))
                    evs = await conn.execute(
                        select(incident_event.c.incident_id, func.count())
                        .where(incident_event.c.account_id == self.owner.account_id)
                        .group_by(incident_event.c.incident_id))
                    return ({r[0]: int(r[1]) for r in feeds}, {r[0]: int(r[1]) for r in evs})
            return world.run(read())

        def pick(self, indexes: list[int]) -> list[str]:
            ids = list(self.snapshot())
            return list(dict.fromkeys(ids[i % len(ids)] for i in indexes)) if ids else []

        def transition(self, path: str, body: dict[str, Any], ids: list[str],
                       accepted: bool, changed: list[str]) -> None:
            """Call the API; check it succeeded exactly when `accepted`, and that a success
            left a feed entry and an event on every changed incident and a refusal changed
            nothing."""
            async def call() -> tuple[int, str]:
                reply = await api.call(path, body, key=self.owner.key)
                return reply.status, str(reply.body)
            self.check(call, "api", accepted, changed, (path, body))

        def check(self, call: Any, way: str, accepted: bool, changed: list[str],
                  what: Any) -> None:
            """Run `call` (-> status, body) made through `way` (api, console, link) and
            check what it did as `transition` says."""
            done, refused = _DONE_REFUSED[way]
            before, (feeds, evs) = self.snapshot(), self.totals()
            status, body = world.run(call())
            if not accepted:
                assert status == refused, (what, status, body)
                assert self.snapshot() == before
                assert self.totals() == (feeds, evs)
                return
            assert status == done, (what, status, body)
            after_feeds, after_evs = self.totals()
            for incident_id in changed:
                assert after_evs.get(incident_id, 0) > evs.get(incident_id, 0), what
                assert after_feeds.get(incident_id, 0) > feeds.get(incident_id, 0), what

        # -- rules ----------------------------------------------------------------------
        @rule(severity=st.sampled_from(["Critical", "Warning", "Info"]))
        def create(self, severity: str) -> None:
            reply = world.run(api.call("/incident/create", {
                "incident_severity": severity, "title": f"{severity} thing"},
                key=self.owner.key))
            assert reply.status == 200, reply.body
            incident_id = reply.data["incident_id"]
            self.hand_set.add(incident_id)
            got = self.snapshot()[incident_id]
            assert (got["progress"], got["incident_severity"]) == ("Triggered", severity)

        def send(self, key: str, status: str) -> None:
            response = world.run(api.client.post(
                PUSH_PATH, params={"integration_key": self.integration_key},
                json={"title_rule": f"alert {key}", "event_status": status,
                      "alert_key": key, "labels": {"svc": _SERVICE[key]}}))
            assert response.status_code == 200, response.text

        @rule(key=_keys, severity=st.sampled_from(["Critical", "Warning", "Info"]))
        def fire(self, key: str, severity: str) -> None:
            self.send(key, severity)

        @rule(key=_keys)
        def recover(self, key: str) -> None:
            self.send(key, "Ok")

        @rule(indexes=_indexes)
        def ack(self, indexes: list[int]) -> None:
            ids, state = self.pick(indexes), self.snapshot()
            if ids:
                ok = all(state[i]["progress"] == "Triggered" for i in ids)
                self.transition("/incident/ack", {"incident_ids": ids}, ids, ok, ids)
                if ok:
                    assert all(self.snapshot()[i]["progress"] == "Processing" for i in ids)

        @rule(indexes=_indexes)
        def unack(self, indexes: list[int]) -> None:
            ids, state = self.pick(indexes), self.snapshot()
            if ids:
                ok = all(state[i]["progress"] == "Processing" for i in ids)
                self.transition("/incident/unack", {"incident_ids": ids}, ids, ok, ids)
                if ok:
                    assert all(self.snapshot()[i]["progress"] == "Triggered" for i in ids)

        @rule(indexes=_indexes)
        def resolve(self, indexes: list[int]) -> None:
            ids, state = self.pick(indexes), self.snapshot()
            if ids:
                ok = all(state[i]["progress"] != "Closed" for i in ids)
                self.transition("/incident/resolve", {"incident_ids": ids}, ids, ok, ids)
                if ok:
                    after = self.snapshot()
                    assert all(after[i]["progress"] == "Closed" for i in ids)
                    assert all(after[i]["closer_id"] == self.owner.person_id for i in ids)

        @rule(indexes=_indexes, reason=_storable_text)
        def reopen(self, indexes: list[int], reason: str) -> None:
            ids, state = self.pick(indexes), self.snapshot()
            if ids:
                ok = all(state[i]["progress"] == "Closed" for i in ids)
                self.transition("/incident/reopen", {"incident_ids": ids, "reason": reason},
                                ids, ok, ids)
                if ok:
                    self.hand_set.update(ids)
                    assert all(self.snapshot()[i]["progress"] == "Triggered" for i in ids)

        @rule(indexes=_indexes, minutes=st.integers(1, 1440))
        def snooze(self, indexes: list[int], minutes: int) -> None:
            ids, state = self.pick(indexes), self.snapshot()
            if ids:
                ok = all(state[i]["progress"] != "Closed" for i in ids)
                self.transition("/incident/snooze", {"incident_ids": ids, "minutes": minutes},
                                ids, ok, ids)

        @rule(index=st.integers(0, 1000), minutes=st.integers(1, 1440))
        def snooze_open(self, index: int, minutes: int) -> None:
            """Snooze one open incident: most picks of `snooze` name a closed one too (and
            are refused), and what happens to a snoozed incident next is the point."""
            open_ids = [i for i, r in self.snapshot().items() if r["progress"] != "Closed"]
            if open_ids:
                ids = [open_ids[index % len(open_ids)]]
                self.transition("/incident/snooze", {"incident_ids": ids, "minutes": minutes},
                                ids, True, ids)

        @rule(indexes=_indexes)
        def wake(self, indexes: list[int]) -> None:
            ids, state = self.pick(indexes), self.snapshot()
            if ids:
                now = int(world.clock.now())
                ok = all(state[i]["snoozed_before"] > now for i in ids)
                self.transition("/incident/wake", {"incident_ids": ids}, ids, ok, ids)

        @rule(into=st.integers(0, 1000), sources=_indexes)
        def merge(self, into: int, sources: list[int]) -> None:
            (target_id,) = self.pick([into]) or [None]
            if target_id is None:
                return
            source_ids = [i for i in self.pick(sources) if i != target_id]
            if not source_ids:
                return
            ok = self.snapshot()[target_id]["progress"] != "Closed"
            self.transition("/incident/merge", {"target_incident_id": target_id,
                                                "source_incident_ids": source_ids},
                            [target_id, *source_ids], ok, [target_id, *source_ids])
            if ok:
                self.hand_set.add(target_id)
                after = self.snapshot()
                for s in source_ids:
                    assert after[s]["merged_into"] == target_id
                    assert after[s]["progress"] == "Closed"

        @rule(action=st.sampled_from(sorted(_ACCEPTS)), index=st.integers(0, 1000))
        def console(self, action: str, index: int) -> None:
            """The same transition from the console's incident page, as the owner."""
            ids = self.pick([index])
            if not ids:
                return
            ok = _ACCEPTS[action](self.snapshot()[ids[0]], int(world.clock.now()))

            async def call() -> tuple[int, str]:
                browser = await signed_in(api, self.owner)
                try:
                    got = await browser.post(f"/console/incidents/{ids[0]}/{action}",
                                             _FORMS.get(action, {}))
                finally:
                    await browser.aclose()
                return got.status_code, got.headers.get("location", "")
            self.check(call, "console", ok, ids, ("console", action))
            if ok and action == "reopen":
                self.hand_set.update(ids)

        @rule(action=st.sampled_from(["ack", "resolve"]), index=st.integers(0, 1000))
        def link(self, action: str, index: int) -> None:
            """The owner's signed link of a notification (acknowledge, resolve)."""
            ids = self.pick([index])
            if not ids:
                return
            ok = _ACCEPTS[action](self.snapshot()[ids[0]], int(world.clock.now()))
            token = links.sign(self.link_key, links.Link(
                action, self.owner.account_id, self.owner.person_id, ids[0],
                int(world.clock.now()) + 600))

            async def call() -> tuple[int, str]:
                got = await api.client.post(links.PATH + token)
                return got.status_code, ""
            self.check(call, "link", ok, ids, ("link", action))

        @rule(into=st.integers(0, 1000), index=st.integers(0, 1000))
        def merge_alert(self, into: int, index: int) -> None:
            """/alert/merge: one alert of any incident into another, which may empty it."""
            (target_id,) = self.pick([into]) or [None]
            placed = self.placed_alerts()
            if target_id is None or not placed:
                return
            alert_id, source_id = placed[index % len(placed)]
            ok = self.snapshot()[target_id]["progress"] != "Closed"
            changed = [] if source_id == target_id else [source_id, target_id]
            self.transition("/alert/merge", {"incident_id": target_id, "alert_ids": [alert_id]},
                            [target_id], ok, changed)

        def placed_alerts(self) -> list[tuple[str, str]]:
            """(alert_id, incident_id) of the account's alerts that are in a (visible)
            incident, oldest first."""
            async def read() -> list[tuple[str, str]]:
                async with api.runtime.db.transaction(write=False) as conn:
                    rows = await conn.execute(
                        select(alert.c.alert_id, alert.c.incident_id)
                        .select_from(alert.join(incident,
                                                incident.c.incident_id == alert.c.incident_id))
                        .where(alert.c.account_id == self.owner.account_id,
                               incident.c.deleted_at == 0)
                        .order_by(alert.c.created_at, alert.c.alert_id))
                    return [(r[0], r[1]) for r in rows]
            return world.run(read())

        @rule(seconds=st.sampled_from([1, 60, 3600, 90_000]))
        def tick(self, seconds: int) -> None:
            """Time passes; the jobs due run (the auto-resolve timer closes quiet incidents)."""
            world.clock.advance(seconds)
            world.run(self.run_jobs())

        async def run_jobs(self) -> None:
            worker = Worker(api.runtime, worker_id="prop")
            while claimed := await worker.claim(20):
                for job in claimed:
                    await worker.execute(job)

        def kinds(self) -> dict[str, dict[str, int]]:
            async def read() -> dict[str, dict[str, int]]:
                async with api.runtime.db.transaction(write=False) as conn:
                    rows = await conn.execute(
                        select(incident_event.c.incident_id, incident_event.c.kind, func.count())
                        .where(incident_event.c.account_id == self.owner.account_id,
                               incident_event.c.kind.in_(["resolved", "reopened"]))
                        .group_by(incident_event.c.incident_id, incident_event.c.kind))
                    found: dict[str, dict[str, int]] = {}
                    for incident_id, kind, n in rows:
                        found.setdefault(incident_id, {})[kind] = int(n)
                    return found
            return world.run(read())

        # -- invariants -----------------------------------------------------------------
        @invariant()
        def incidents_are_consistent(self) -> None:
            state = self.snapshot()
            feeds, evs = self.totals()

            async def alert_facts() -> dict[str, tuple[int, int, int]]:
                async with api.runtime.db.transaction(write=False) as conn:
                    rows = await conn.execute(
                        select(alert.c.incident_id, func.count(),
                               func.sum(case((alert.c.end_time == 0, 1), else_=0)),
                               func.sum(alert.c.event_cnt))
                        .where(alert.c.account_id == self.owner.account_id,
                               alert.c.deleted_at == 0, alert.c.incident_id.is_not(None))
                        .group_by(alert.c.incident_id))
                    return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows}
            async def active_severities() -> dict[str, list[str]]:
                async with api.runtime.db.transaction(write=False) as conn:
                    rows = await conn.execute(
                        select(alert.c.incident_id, alert.c.alert_severity)
                        .where(alert.c.account_id == self.owner.account_id,
                               alert.c.deleted_at == 0, alert.c.end_time == 0,
                               alert.c.incident_id.is_not(None)))
                    found: dict[str, list[str]] = {}
                    for incident_id, severity in rows:
                        found.setdefault(incident_id, []).append(severity)
                    return found
            facts, active = world.run(alert_facts()), world.run(active_severities())
            kinds = self.kinds()
            for incident_id, r in state.items():
                closed = r["progress"] == "Closed"
                assert r["progress"] in ("Triggered", "Processing", "Closed")
                closes = kinds.get(incident_id, {})
                assert closes.get("resolved", 0) == closes.get("reopened", 0) + closed, (
                    r, closes)
                if closed:
                    assert r["close_time"] > 0 and r["end_time"] > 0, r
                    assert r["incident_status"] == "Ok", r
                    assert r["snoozed_before"] == 0, r
                    assert incident_id not in active, (r, active[incident_id])
                else:
                    assert (r["close_time"], r["end_time"], r["closer_id"]) == (0, 0, 0), r
                    assert r["incident_status"] == r["incident_severity"], r
                    assert r["merged_into"] is None, r
                if r["progress"] == "Processing":
                    assert r["ack_time"] > 0 and not closed, r
                if not closed and incident_id not in self.hand_set and incident_id in active:
                    worst = max(active[incident_id], key=SEVERITY_RANK.__getitem__)
                    assert r["incident_severity"] == worst, (r, active[incident_id])
                counted = (r["alert_cnt"], r["active_alert_cnt"], r["alert_event_cnt"])
                assert counted == facts.get(incident_id, (0, 0, 0)), (r, facts)
                assert feeds.get(incident_id, 0) >= 1 and evs.get(incident_id, 0) >= 1
                responders = msgspec.json.decode(r["responders"])
                assert len({p["person_id"] for p in responders}) == len(responders)

    return IncidentLifecycle


def test_incident_lifecycle_properties(sqlite_url: str) -> None:
    app_settings = Settings(
        database_url=sqlite_url, secret_key="test-secret-key", allow_private_network=True,
        rate_limit_per_second=1_000_000, rate_limit_per_minute=10_000_000,
        run_workers=False, log_level="warning",
    )
    world = _World(app_settings)
    try:
        run_state_machine_as_test(_machine(world), settings=RUN)
    finally:
        world.close()

