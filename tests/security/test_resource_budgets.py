"""Resource budgets: templates run inside bounds enforced while they run (size of any value,
steps, `range` iterations, `template` depth, wall clock), and a mapping schema holds at most
its row cap whatever the number of uploads."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import structlog

from dutyline.api.actor import Actor
from dutyline.kit.gotemplate import Limits, Template, TemplateLimitError
from dutyline.notify.template import engine, service
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api

# Each builds hundreds of megabytes without a bound on intermediate values.
AMPLIFIERS = {
    "printf doubling": '{{$s := "xxxxxxxxxxxxxxxx"}}{{range 25}}{{$s = printf "%s%s" $s $s}}'
                       '{{end}}{{len $s}}',
    "printf width": '{{printf "%09000000d" 1 | len}}',
    "printf star width": '{{$w := 900000}}{{printf "%*d%*d%*d%*d" $w 1 $w 1 $w 1 $w 1 | len}}',
    "printf width over a list": '{{printf "%900000v" (list 1 2 3 4 5 6 7 8 9) | len}}',
    "replace": '{{$s := "xxxxxxxxxxxxxxxx"}}{{range 25}}{{$s = replace "x" "xx" $s}}{{end}}'
               '{{len $s}}',
    "replace of the empty string": '{{$s := printf "%0900000d" 0}}{{replace "" "abcdefgh" $s '
                                   '| len}}',
    "join": '{{$s := printf "%0900000d" 0}}{{join "" (list $s $s $s $s $s $s) | len}}',
    "print of many arguments": '{{$s := printf "%0900000d" 0}}{{print $s $s $s $s $s $s | len}}',
    "html of many arguments": '{{$s := printf "%0900000d" 0}}{{html $s $s $s $s $s $s | len}}',
    "a list of itself, printed": '{{$a := list "xxxxxxxxxxxxxxxxxxxxxxxx"}}{{range 30}}'
                                 '{{$a = list $a $a}}{{end}}{{print $a | len}}',
    "a list of itself, as JSON": '{{$a := list "xxxxxxxxxxxxxxxxxxxxxxxx"}}{{range 30}}'
                                 '{{$a = list $a $a}}{{end}}{{jsonGet $a "" | len}}',
}


@pytest.fixture
def peak_memory() -> Iterator[list[int]]:
    tracemalloc.start()
    peak: list[int] = []
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


@pytest.mark.parametrize("source", AMPLIFIERS.values(), ids=AMPLIFIERS.keys())
def test_no_function_builds_a_value_over_the_bound(source: str) -> None:
    tmpl = engine.compile_for("sms", source)
    tracemalloc.start()
    try:
        with pytest.raises(TemplateLimitError, match="over the limit of 256000"):
            engine.render(tmpl, {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # refused before it is built: a few times the bound (4 bytes a character at most)
    assert peak < 12 * 256_000, peak


def test_widths_past_a_million_are_refused_as_go_does() -> None:
    # Go's fmt: a width past tooLarge swallows the rest of the format (corpus.json has more)
    out = Template.parse('{{printf "%0500000000d|" 1}}').render({})
    assert out == "%!(NOVERB)%!(EXTRA int=1)"


def test_range_iterations_are_bounded_across_loops() -> None:
    tmpl = Template.parse("{{range 600}}{{range 600}}{{end}}{{end}}")
    with pytest.raises(TemplateLimitError, match="range iteration limit"):
        tmpl.render({}, Limits(max_iterations=100_000, max_steps=10_000_000))
    assert Template.parse("{{range 3}}{{.}}{{end}}").render({}, Limits(max_iterations=3)) == "012"


class JumpingClock:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += 1.0
        return self.now


@pytest.mark.parametrize("render", ["compiled", "reference"])
def test_the_time_budget_is_checked_by_the_step_counter(render: str) -> None:
    tmpl = Template.parse("{{range 100000}}{{.}}{{end}}")
    clock = JumpingClock()
    limits = Limits(max_seconds=2.5, clock=clock, max_output=10_000_000)
    run = tmpl.render if render == "compiled" else tmpl.render_reference
    with pytest.raises(TemplateLimitError, match=r"time limit \(2.5 s\)"):
        run({}, limits)
    # the clock is read once at the start and then every 256 steps, not at every step
    assert clock.reads == 4


def test_the_default_templates_stay_well_inside_the_budget() -> None:
    from dutyline.notify.template.data import sample_data
    from dutyline.notify.template.defaults import DEFAULT_BODIES

    clock = JumpingClock()
    limits = Limits(max_seconds=1.5, clock=clock)
    data = sample_data(1_700_000_000, "http://x")
    for channel, body in DEFAULT_BODIES.items():
        clock.reads = 0
        engine.compile_for(channel, body).render(data, limits)
        assert clock.reads == 1, channel  # a render of a few dozen steps: no look at the clock



async def _max_loop_gap_while(work: Any) -> tuple[float, Any]:
    """Run `work` while the event loop ticks; the longest the loop was held, and the result."""
    result: list[Any] = []
    done = anyio.Event()

    async def run() -> None:
        try:
            result.append(await work())
        finally:
            done.set()

    gap = 0.0
    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        last = time.perf_counter()
        while not done.is_set():
            await anyio.lowlevel.checkpoint()
            now = time.perf_counter()
            gap, last = max(gap, now - last), now
    return gap, result[0]


# Each of its 40,000 iterations copies 200,000 characters: far more than the time budget.
SLOW = ('{{$s := printf "%0200000d" 0}}{{range 40000}}{{$t := replace "0" "1" $s}}{{end}}'
        'done')


@pytest.mark.anyio
async def test_preview_past_the_time_budget_is_a_400_and_leaves_the_loop_free(
        api: Api, owner: Person) -> None:
    started = time.perf_counter()
    gap, reply = await _max_loop_gap_while(lambda: api.call(
        "/template/preview", {"type": "sms", "content": SLOW}, key=owner.key))
    elapsed = time.perf_counter() - started
    assert (reply.status, reply.code) == (400, "InvalidParameter"), reply.body
    assert "content" in reply.message and "time limit (0.5 s)" in reply.message
    assert elapsed < 5
    # the render ran in a worker thread, in bounded steps: the loop kept turning
    assert gap < 0.25, gap


@pytest.mark.anyio
async def test_preview_and_create_refuse_a_value_over_the_bound(api: Api, owner: Person) -> None:
    source = AMPLIFIERS["printf doubling"]
    preview = await api.call("/template/preview", {"type": "sms", "content": source},
                             key=owner.key)
    assert (preview.status, preview.code) == (400, "InvalidParameter")
    assert "content" in preview.message and "over the limit of 256000" in preview.message
    created = await api.call("/template/create", {"template_name": "Amp", "slack": source},
                             key=owner.key)
    assert (created.status, created.code) == (400, "InvalidParameter")
    assert "slack" in created.message and "over the limit of 256000" in created.message
    listed = await api.call("/template/list", {}, key=owner.key)
    assert [t for t in listed.data["items"] if not t["preset"]] == []  # nothing written


@pytest.mark.anyio
async def test_delivery_falls_back_to_the_preset_body_and_logs_it(api: Api,
                                                                  owner: Person) -> None:
    # Fine on the sample incident (so it is accepted), over the bound on the real one.
    body = ('{{if eq .Title "boom"}}{{$s := "xxxxxxxxxxxxxxxx"}}{{range 25}}'
            '{{$s = printf "%s%s" $s $s}}{{end}}{{end}}{{.Title}}')
    created = await api.call("/template/create", {"template_name": "Boom", "sms": body},
                             key=owner.key)
    assert created.status == 200, created.body
    template_id = created.data["template_id"]
    incident = await api.call("/incident/create", {"incident_severity": "Warning",
                                                   "title": "boom"}, key=owner.key)
    incident_id = incident.data["incident_id"]
    actor = Actor.system(owner.account_id, api.runtime.clock)
    before = service.RENDER_FAILURES["sms"]
    with structlog.testing.capture_logs() as logs:
        async with api.runtime.db.transaction() as conn:
            fell = await service.render_for_incident(conn, actor, template_id=template_id,
                                                     channel="sms", incident_id=incident_id,
                                                     deps=api.runtime.deps)
            preset = await service.render_for_incident(conn, actor, template_id=None,
                                                       channel="sms", incident_id=incident_id,
                                                       deps=api.runtime.deps)
    assert fell.fell_back and "over the limit of 256000" in fell.error
    assert fell.text == preset.text and "boom" in fell.text
    assert service.RENDER_FAILURES["sms"] == before + 1
    [line] = [x for x in logs if x["event"] == "template_render_failed"]
    assert line["template_id"] == template_id and "over the limit" in line["error"]


# -- the row cap of a mapping schema ----------------------------------------------------------

def _csv(hosts: range) -> bytes:
    return ("host,owner,team,service\n"
            + "".join(f"h{i},o{i},t,s\n" for i in hosts)).encode()


async def _mapping(api: Api, owner: Person) -> str:
    from tests.enrichment.test_mapping import create

    return await create(api, owner)


async def _held(api: Api, schema_id: str) -> set[str]:
    from tests.enrichment.test_mapping import rows

    return set(await rows(api, schema_id))


@pytest.mark.anyio
async def test_uploads_that_append_stop_at_the_schema_cap(
        api: Api, owner: Person, monkeypatch: pytest.MonkeyPatch) -> None:
    from dutyline.enrichment import service as enrichment
    from tests.enrichment.test_mapping import upload

    monkeypatch.setattr(enrichment, "MAX_SCHEMA_ROWS", 2500)
    monkeypatch.setattr(enrichment, "UPLOAD_BATCH", 1000)
    schema_id = await _mapping(api, owner)
    first = await upload(api, owner, schema_id, _csv(range(2000)))
    assert first.status_code == 200, first.text
    # 2000 held + 1500 new: over the cap in its second batch; refused whole
    second = await upload(api, owner, schema_id, _csv(range(2000, 3500)), truncate=False)
    assert second.status_code == 400, second.text
    body = second.json()
    assert body["error"]["code"] == "InvalidParameter"
    assert "file" in body["error"]["message"] and "at most 2500 rows" in body["error"]["message"]
    assert await _held(api, schema_id) == {f"h{i}" for i in range(2000)}
    # replacing keys already held is no growth; so is an upload that truncates first
    again = await upload(api, owner, schema_id, _csv(range(1000, 2500)), truncate=False)
    assert again.status_code == 200, again.text
    assert len(await _held(api, schema_id)) == 2500
    fresh = await upload(api, owner, schema_id, _csv(range(5000, 7500)))
    assert fresh.status_code == 200, fresh.text
    assert await _held(api, schema_id) == {f"h{i}" for i in range(5000, 7500)}


@pytest.mark.anyio
async def test_upserts_stop_at_the_schema_cap(
        api: Api, owner: Person, monkeypatch: pytest.MonkeyPatch) -> None:
    from dutyline.enrichment import service as enrichment
    from tests.enrichment.test_mapping import upload

    monkeypatch.setattr(enrichment, "MAX_SCHEMA_ROWS", 3)
    schema_id = await _mapping(api, owner)
    assert (await upload(api, owner, schema_id, _csv(range(2)))).status_code == 200

    def docs(*hosts: str) -> list[dict[str, str]]:
        return [{"host": h, "owner": "o", "team": "t", "service": "s"} for h in hosts]

    over = await api.call("/enrichment/mapping/data/upsert",
                          {"schema_id": schema_id, "docs": docs("h0", "x1", "x2")},
                          key=owner.key)
    assert (over.status, over.code) == (400, "InvalidParameter")
    assert "docs" in over.message and "at most 3 rows" in over.message
    assert await _held(api, schema_id) == {"h0", "h1"}
    fits = await api.call("/enrichment/mapping/data/upsert",
                          {"schema_id": schema_id, "docs": docs("h0", "h1", "x1")},
                          key=owner.key)
    assert fits.status == 200, fits.body
    assert await _held(api, schema_id) == {"h0", "h1", "x1"}
