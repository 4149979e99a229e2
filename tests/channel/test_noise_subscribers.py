"""An inhibit rule write rebuilds ingestion's source index through a subscription the
incident domain registers (the channel domain imports nothing of it). Every process has it,
once, after loading the domains' task modules as it does at start; importing the channel
domain alone registers nothing (tests/incident/test_ingest_noise.py shows the rebuild)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json
    from dutyline.channel.noise import service as noise
    before = [f.__module__ + "." + f.__name__ for f in noise._inhibit_indexers]
    from dutyline import domains
    domains.load_tasks()
    after = [f.__module__ + "." + f.__name__ for f in noise._inhibit_indexers]
    print(json.dumps({"before": before, "after": after}))
    """
)


def test_loading_the_domains_registers_ingestions_inhibit_index_once() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=120, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"before": [], "after": ["dutyline.incident.ingest.noise.reindex_rule"]}
