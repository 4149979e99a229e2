"""Alert ingestion with an integration's enrichment (10 mapping schemas of 100,000 rows each)
against the same ingestion without enrichment, in the same run (the goal: at most 15 % fewer
events/s).

    python -m bench.enrichment [--seconds 10] [--rounds 3] [--connections 32] [--postgres]

Two servers, each on its own database prepared as bench/ingest.py does (a channel grouping by
`labels.svc`, 600 seeded keys, wrk's 80/15/5 update/new/recover mix). BOTH databases get 10
mapping schemas, each keyed on `svc` with result labels `owner<k>` and `tier<k>`, loaded by
CSV upload with 100,000 rows (svc-0 ... svc-19, the benchmark's services, plus 99,980 others).
Only the `enriched` server's integration has enrichment rules: 10 mapping rules, one per
schema, so every event looks up 10 rows (one statement) and gains 20 labels before it is
stored and grouped. Measurements alternate plain, enriched per round; medians shown.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from typing import Any

from bench.harness import Server, post
from bench.ingest_pair import run_pair

SCHEMAS = 10
ROWS = 100_000
GOAL_RATIO = 0.85


def _upload(server: Server, schema_id: str, data: bytes) -> dict[str, Any]:
    url = server.url("/enrichment/mapping/data/upload", "owner") + f"&schema_id={schema_id}"
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "text/csv"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def load_schemas(server: Server) -> list[str]:
    ids: list[str] = []
    for k in range(SCHEMAS):
        created = post(server.url("/enrichment/mapping/schema/create", "owner"), {
            "schema_name": f"cmdb-{k}", "source_labels": ["svc"],
            "result_labels": [f"owner{k}", f"tier{k}"]})
        schema_id = created["data"]["schema_id"]
        lines = [f"svc,owner{k},tier{k}"]
        lines += [f"svc-{i},team-{(i + k) % 7},tier-{i % 3}" for i in range(20)]
        lines += [f"svc-x{i},team-{i % 50},tier-{i % 3}" for i in range(ROWS - 20)]
        reply = _upload(server, schema_id, ("\n".join(lines) + "\n").encode())
        if "data" not in reply:
            raise RuntimeError(f"upload failed: {reply}")
        ids.append(schema_id)
    return ids


def add_rules(server: Server, schema_ids: list[str]) -> None:
    integrations = post(server.url("/integration/list", "owner"), {"limit": 10})
    integration_id = integrations["data"]["items"][0]["integration_id"]
    rules = [{"kind": "mapping", "settings": {"schema_id": s, "mapping_type": "schema",
                                              "result_labels": [f"owner{k}", f"tier{k}"]}}
             for k, s in enumerate(schema_ids)]
    reply = post(server.url("/enrichment/upsert", "owner"),
                 {"integration_id": integration_id, "rules": rules})
    if "data" not in reply:
        raise RuntimeError(f"enrichment upsert failed: {reply}")


def set_up(name: str, server: Server, _push_url: str) -> None:
    schema_ids = load_schemas(server)
    if name == "enriched":
        add_rules(server, schema_ids)


def main() -> int:
    return run_pair(__doc__.split("\n")[0], feature="enriched", set_up=set_up,
                    title="alert ingestion with enrichment",
                    holds=f"{SCHEMAS} mapping schemas x {ROWS:,} rows", goal_ratio=GOAL_RATIO)


if __name__ == "__main__":
    sys.exit(main())
