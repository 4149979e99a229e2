"""What a data source's TLS settings cost an evaluation batch of alert rule queries.

A Prometheus-API peer (tests/fixtures/fake_prometheus.py) on loopback, served over plain
HTTP and over HTTPS with a certificate of a CA made here. One batch = one `prom.ClientPool`
(what `engine.evaluate_many` opens per job) running `--queries` instant queries, `--parallel`
in flight. Measured in the same run, each as a ratio against the plain-HTTP batch:

- https, CA given (`tls_ca` + `tls_server_name`): handshakes plus TLS framing;
- https, client certificate too (the server asks for one: mutual TLS);
- the cost of building a context: cached (what every batch after the first pays) against a
  fresh build with the system bundle and with the source's own CA.

    .venv/bin/python -m bench.monit_tls [--queries 500] [--parallel 50] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.fixtures.fake_prometheus import PromTable
from tests.fixtures.loopback import serve_asgi
from tests.fixtures.tls_certs import ThrowawayCA

from dutyline.kit.outbound import OutboundPolicy
from dutyline.monit import prom, tls

NAME = "prom.test"


async def batch(target: prom.Target, queries: int, parallel: int) -> float:
    pool = prom.ClientPool(OutboundPolicy(allow_private=True))
    gate = asyncio.Semaphore(parallel)

    async def one() -> None:
        async with gate:
            client = await pool.get(target.tls)
            await prom.instant_query(OutboundPolicy(allow_private=True), target, "up",
                                     time.time(), client=client)

    started = time.perf_counter()
    try:
        await asyncio.gather(*(one() for _ in range(queries)))
    finally:
        await pool.aclose()
    return time.perf_counter() - started


def median_of(rounds: int, measure: Callable[[], Awaitable[float]]) -> float:
    return statistics.median(asyncio.run(measure()) for _ in range(rounds))


def build_ms(settings: tls.TlsSettings, rounds: int, *, cached: bool) -> float:
    times = []
    for _ in range(rounds):
        if not cached:
            tls.context_for.cache_clear()
        started = time.perf_counter()
        tls.context_for(settings)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--parallel", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    table = PromTable(answers={"up": [({"instance": "web-1"}, 1.0)]})
    ca = ThrowawayCA()
    client = ca.issue("dutyline", client=True)
    folder = Path(tempfile.mkdtemp(prefix="bench-monit-tls-"))
    cert, key = ca.issue("prometheus", dns=NAME).write(folder, "server")
    ca_file = folder / "ca.crt"
    ca_file.write_text(ca.cert_pem)
    with_ca = tls.TlsSettings(ca=ca.cert_pem, server_name=NAME)
    mutual = tls.TlsSettings(ca=ca.cert_pem, server_name=NAME, cert=client.cert_pem,
                             key=client.key_pem)
    with serve_asgi(table.app()) as plain_url, \
            serve_asgi(table.app(), ssl_certfile=cert, ssl_keyfile=key) as tls_url, \
            serve_asgi(table.app(), ssl_certfile=cert, ssl_keyfile=key,
                       ssl_ca_certs=str(ca_file), ssl_cert_reqs=ssl.CERT_REQUIRED) as mtls_url:
        runs = {
            "http (baseline)": prom.Target(address=plain_url),
            "https, tls_ca": prom.Target(address=tls_url, tls=with_ca),
            "https, tls_ca + client certificate": prom.Target(address=mtls_url, tls=mutual),
        }
        results = {name: median_of(args.rounds, lambda t=target: batch(t, args.queries,
                                                                         args.parallel))
                   for name, target in runs.items()}
    base = results["http (baseline)"]
    print(f"{args.queries} queries a batch, {args.parallel} in flight, median of "
          f"{args.rounds} batches")
    print("| batch | seconds | queries/s | time vs http |")
    print("|---|---|---|---|")
    for name, seconds in results.items():
        print(f"| {name} | {seconds:.3f} | {args.queries / seconds:,.0f} | "
              f"{seconds / base:.2f}x |")
    cached = build_ms(mutual, args.rounds * 20, cached=True)
    fresh_ca = build_ms(mutual, args.rounds, cached=False)
    fresh_system = build_ms(tls.TlsSettings(skip_verify=False, min_version="1.2"), args.rounds,
                            cached=False)
    print("| context | ms | vs cached |")
    print("|---|---|---|")
    for name, ms in (("cached", cached), ("fresh, own CA + client key", fresh_ca),
                     ("fresh, system bundle", fresh_system)):
        print(f"| {name} | {ms:.3f} | {ms / max(cached, 1e-6):,.0f}x |")


if __name__ == "__main__":
    main()
