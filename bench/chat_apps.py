"""Personal pages through a chat app (Feishu): what the cached access token saves, next to
bare posts of the same message from the same process in the same run.

    python -m bench.chat_apps [--messages 1000] [--concurrency 8] [--rounds 3]

The fake Feishu API (tests/fixtures/fake_chat_apps.py, uvicorn in a thread of this process)
answers every call. Per round, `--messages` messages at `--concurrency` at a time:

- bare: guarded httpx POSTs of the same message body to the send endpoint with a fixed token
  (what the adapter's send costs at the least);
- cached: `feishu_app.send_personal` as the delivery job calls it, the token fetched once and
  reused (the shipped behaviour);
- uncached: the same, with the token cache cleared before each message (one token request per
  message: what a page costs without the cache, and what the platforms throttle).

Each figure is messages per second; the ratios are against `bare` of the same round. Every
message is checked: all attempts ok, and the fake saw exactly the expected token fetches.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from tests.fixtures.fake_chat_apps import FEISHU_APP_ID, FEISHU_APP_SECRET, FakeChatApps, build
from tests.fixtures.loopback import serve_asgi

from dutyline.config import ChatApps, Settings
from dutyline.kit import outbound
from dutyline.kit.clock import SystemClock
from dutyline.kit.outbound import OutboundPolicy
from dutyline.kit.secretbox import SecretBox
from dutyline.notify.delivery.adapters import app_tokens, feishu_app
from dutyline.notify.delivery.adapters.base import Outgoing, SendEnv, dumps

TEXT = "[Critical] checkout latency high (#LRTKDE)\nChannel: Checkout\n" + "x" * 400


async def _drive(n: int, concurrency: int, one: Callable[[int], Awaitable[bool]]) -> float:
    """Messages per second for n calls of `one`, `concurrency` at a time; all must succeed."""
    queue = iter(range(n))
    failures = 0

    async def worker() -> None:
        nonlocal failures
        for i in queue:
            if not await one(i):
                failures += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{failures} of {n} messages failed")
    return n / elapsed


async def run(messages: int, concurrency: int, rounds: int) -> None:
    fake = FakeChatApps()
    with serve_asgi(build(fake)) as base:
        apps = ChatApps(feishu_api_url=base + "/feishu", feishu_app_id=FEISHU_APP_ID,
                        feishu_app_secret=FEISHU_APP_SECRET)
        settings = Settings(allow_private_network=True, chat_apps=apps)
        env = SendEnv(settings=settings, policy=OutboundPolicy(allow_private=True),
                      secrets=SecretBox("bench"), clock=SystemClock())
        send_url = f"{base}/feishu/open-apis/im/v1/messages?receive_id_type=open_id"
        fixed_token = fake._issue("t-")

        async def bare(i: int) -> bool:
            body = dumps({"receive_id": "ou_bench", "msg_type": "text",
                          "content": dumps({"text": TEXT}), "uuid": f"bench{i:019d}"})
            async with outbound.guarded_client(env.policy.without_retries(), timeout=10.0,
                                               follow_redirects=True) as client:
                response = await client.post(send_url, content=body.encode(), headers={
                    "Content-Type": "application/json; charset=utf-8",
                    "Authorization": f"Bearer {fixed_token}"})
            return response.status_code == 200

        async def adapter(i: int) -> bool:
            out = Outgoing(delivery_id=f"bench{i:019d}", channel="feishu", address="ou_bench",
                           content={"text": TEXT}, attempt=1)
            return (await feishu_app.send_personal(env, out)).ok

        async def uncached(i: int) -> bool:
            app_tokens.clear()
            return await adapter(i)

        figures: dict[str, list[float]] = {"bare": [], "cached": [], "uncached": []}
        for r in range(rounds):
            fake.take()
            figures["bare"].append(await _drive(messages, concurrency, bare))
            app_tokens.clear()
            figures["cached"].append(await _drive(messages, concurrency, adapter))
            fetched = sum(1 for q in fake.take() if q.path.endswith("/internal"))
            # Workers missing the empty cache at once may each fetch (documented): at most
            # one per worker, never one per message.
            assert 1 <= fetched <= concurrency, fetched
            figures["uncached"].append(await _drive(messages, concurrency, uncached))
            fetched = sum(1 for q in fake.take() if q.path.endswith("/internal"))
            assert fetched == messages, fetched
            print(f"round {r + 1}: " + ", ".join(
                f"{k} {v[-1]:.0f}/s" for k, v in figures.items()), flush=True)
        bare_median = statistics.median(figures["bare"])
        for name, values in figures.items():
            ratios = [v / b for v, b in zip(values, figures["bare"], strict=True)]
            print(f"{name:9s} median {statistics.median(values):7.0f} msg/s   "
                  f"vs bare: {min(ratios):.2f}-{max(ratios):.2f} "
                  f"(median {statistics.median(values) / bare_median:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.messages, args.concurrency, args.rounds))


if __name__ == "__main__":
    main()
