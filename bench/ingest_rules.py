"""Alert ingestion with a channel's noise rules against the same ingestion without rules, in
the same run (the goal: at most 15 % fewer events/s).

    python -m bench.ingest_rules [--seconds 10] [--rounds 3] [--connections 32] [--postgres]

Two servers, each on its own database prepared the same way as bench/ingest.py (a channel
grouping by `labels.svc`, 600 seeded keys, wrk's 80/15/5 update/new/recover mix), plus on
BOTH databases 10,000 active "source" alerts (`kind=node`, `rack=rack-<j % 100>`,
`host=src-<j>`). The `rules` database's channel also has:

- 100 enabled inhibit rules: rule i has source_filters `kind IN [node] AND rack IN [rack-i]`,
  target_filters `svc IN [svc-<i % 20>] AND env IN [prod]`, equals `[labels.host]`; so every
  new alert of the benchmark matches the target filters of 5 rules and looks up its sources
  5 times (by index: it finds none, the benchmark's hosts are not the sources' hosts), and
  each of the 10,000 sources has one row in the source index;
- 20 enabled silence rules in effect all day (`00:00`-`24:00`): rule k filters
  `svc IN [svc-k] AND env IN [staging]`, so every new alert is a candidate of one rule and
  fails its filter (the benchmark's alerts are `env=prod`).

Measurements alternate plain, rules per round; medians shown.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.harness import Server, post
from bench.ingest_pair import run_pair

SOURCES = 10_000
INHIBIT_RULES = 100
SILENCE_RULES = 20
GOAL_RATIO = 0.85


def cond(key: str, *vals: str) -> dict[str, Any]:
    return {"key": key, "oper": "IN", "vals": list(vals)}


def seed_sources(push_url: str) -> None:
    def one(j: int) -> None:
        reply = post(push_url, {
            "title_rule": "node down", "event_status": "Critical", "alert_key": f"src-{j}",
            "labels": {"kind": "node", "rack": f"rack-{j % INHIBIT_RULES}", "host": f"src-{j}",
                       "svc": "infra"},
        })
        if "data" not in reply:
            raise RuntimeError(f"seeding sources failed: {reply}")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(SOURCES)))


def add_rules(server: Server) -> None:
    channels = post(server.url("/channel/list", "owner"), {"limit": 10})
    channel_id = channels["data"]["items"][0]["channel_id"]
    for i in range(INHIBIT_RULES):
        reply = post(server.url("/channel/inhibit/rule/create", "owner"), {
            "channel_id": channel_id, "rule_name": f"rack {i} down",
            "source_filters": [[cond("labels.kind", "node"), cond("labels.rack", f"rack-{i}")]],
            "target_filters": [[cond("labels.svc", f"svc-{i % 20}"),
                                cond("labels.env", "prod")]],
            "equals": ["labels.host"],
        })
        if "data" not in reply:
            raise RuntimeError(f"inhibit rule failed: {reply}")
    for k in range(SILENCE_RULES):
        reply = post(server.url("/channel/silence/rule/create", "owner"), {
            "channel_id": channel_id, "rule_name": f"staging svc-{k}",
            "time_filters": [{"start": "00:00", "end": "24:00", "repeat": []}],
            "filters": [[cond("labels.svc", f"svc-{k}"), cond("labels.env", "staging")]],
        })
        if "data" not in reply:
            raise RuntimeError(f"silence rule failed: {reply}")


def set_up(name: str, server: Server, push_url: str) -> None:
    # Rules first, so the sources are indexed as they arrive (a rule written later indexes
    # the channel's existing alerts the same way, in its own transaction).
    if name == "rules":
        add_rules(server)
    seed_sources(push_url)


def main() -> int:
    return run_pair(__doc__.split("\n")[0], feature="rules", set_up=set_up,
                    title="alert ingestion with noise rules",
                    holds=f"{SOURCES:,} active source alerts", goal_ratio=GOAL_RATIO)


if __name__ == "__main__":
    sys.exit(main())
