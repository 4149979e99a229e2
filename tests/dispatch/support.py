"""Helpers of the escalation tests: channels wired to an integration, rules, running jobs."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from dutyline.work.worker import Worker
from tests.fixtures.accounts import Person
from tests.fixtures.api import Api, Reply

PRESET_TEMPLATE = "6321aad26c12104586a88916"
PUSH_PATH = "/event/push/alert/standard"


async def make_channel(api: Api, who: Person, name: str = "Checkout") -> int:
    created = await api.call("/channel/create", {"channel_name": name}, key=who.key)
    return int(created.data["channel_id"])


async def make_integration(api: Api, who: Person, channel_id: int) -> str:
    integ = await api.call("/integration/create", {
        "channel_id": channel_id, "integration_name": "std"}, key=who.key)
    return str(integ.data["integration_key"])


def layer(**target: Any) -> dict[str, Any]:
    options = {k: target.pop(k) for k in ("max_times", "notify_step", "escalate_window",
                                          "force_escalate") if k in target}
    target.setdefault("by", {"follow_preference": True})
    return {"target": target, **options}


def rule_body(channel_id: int, layers: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"channel_id": channel_id, "template_id": PRESET_TEMPLATE, "rule_name": "Default",
            "layers": layers, **extra}


async def create_rule(api: Api, who: Person, body: dict[str, Any]) -> str:
    reply = await api.call("/channel/escalate/rule/create", body, key=who.key)
    assert reply.status == 200, reply.body
    return str(reply.data["rule_id"])


async def push(api: Api, integration_key: str, title: str = "checkout latency high",
               status: str = "Critical", alert_key: str = "k1", **extra: Any) -> Reply:
    response = await api.client.post(PUSH_PATH, params={"integration_key": integration_key},
                                     json={"title_rule": title, "event_status": status,
                                           "alert_key": alert_key, **extra})
    return Reply(response.status_code, response.json(), response.headers)


async def run_jobs(api: Api, limit: int = 500) -> list[str]:
    """Run every due job to its outcome, including successors due now."""
    worker = Worker(api.runtime, worker_id="test")
    outcomes: list[str] = []
    while (claimed := await worker.claim(10)) and len(outcomes) < limit:
        outcomes.extend([await worker.execute(j) for j in claimed])
    return outcomes


@dataclass
class MailLink:
    href: str
    text: str
    in_body: bool  # inside <body> (a link after </body> or </html> is not shown everywhere)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[MailLink] = []
        self.text: list[str] = []
        self._body = "none"  # none, open, closed
        self._href: str | None = None
        self._anchor: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self._body = "open"
        elif tag == "a":
            self._href, self._anchor = dict(attrs).get("href") or "", []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("body", "html"):
            self._body = "closed"
        elif tag == "a" and self._href is not None:
            # A fragment with no <body> at all is one: every client shows it whole.
            self.links.append(MailLink(self._href, "".join(self._anchor).strip(),
                                       self._body != "closed"))
            self._href = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._href is not None:
            self._anchor.append(data)


def mail_links(html: str) -> tuple[list[MailLink], str]:
    """The links of an e-mail's HTML part, and its text (entities decoded)."""
    parser = _Links()
    parser.feed(html)
    parser.close()
    return parser.links, "".join(parser.text)
