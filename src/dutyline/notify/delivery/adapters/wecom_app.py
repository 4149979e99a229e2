"""WeCom (WeChat Work) through the server's self-built app (DUTYLINE_WECOM_CORP_ID,
_CORP_SECRET and _AGENT_ID):

1. `GET {api}/cgi-bin/gettoken?corpid=…&corpsecret=…` -> `{"errcode": 0, "access_token",
   "expires_in": 7200}` (cached, as WeCom requires);
2. a person: `POST {api}/cgi-bin/message/send?access_token=…` with `{"touser": <userid>,
   "msgtype": "text", "agentid", "text": {"content": …}, "safe": 0,
   "enable_duplicate_check": 1, "duplicate_check_interval": 1800}` -> `{"errcode": 0,
   "invaliduser": "", "msgid"}`;
   a group chat of the app (`wecom_app` target, `chat_ids`): `POST
   {api}/cgi-bin/appchat/send?access_token=…` with `{"chatid", "msgtype": "text", "text",
   "safe": 0}`.

WeCom answers HTTP 200 with `errcode`; the token and secret travel in the query string, so the
history shows them masked."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from dutyline.kit.outbound import redact_url
from dutyline.notify.delivery.adapters import app_tokens
from dutyline.notify.delivery.adapters.base import (
    Attempt,
    Outgoing,
    SendEnv,
    dumps,
    post,
    request,
    response_field,
)

MAX_BYTES = 2_048  # WeCom's limit on a text message
TOKEN_REFUSED = frozenset({"40001", "40014", "42001"})
# System busy, rate limits: passing.
RETRYABLE = frozenset({"-1", "45009", "45033", "45047"})


def _key(env: SendEnv) -> str:
    apps = env.settings.chat_apps
    return app_tokens.cache_key("wecom", apps.wecom_api_url, apps.wecom_corp_id or "",
                                apps.wecom_corp_secret or "")


async def _fetch_token(env: SendEnv) -> str | Attempt:
    apps = env.settings.chat_apps
    query = urlencode({"corpid": apps.wecom_corp_id, "corpsecret": apps.wecom_corp_secret})
    url = f"{apps.wecom_api_url}/cgi-bin/gettoken?{query}"

    async def fetch() -> Attempt:
        reply = await request(env, "GET", url, b"", {})
        if reply.ok and response_field(reply, "errcode") not in ("", "0"):
            reply.ok = False
            reply.error = f"wecom: errcode {response_field(reply, 'errcode')}"
        return reply

    return await app_tokens.token(env, _key(env), fetch, token_path=("access_token",),
                                  ttl_path=("expires_in",))


async def _send(env: SendEnv, out: Outgoing, *, group: bool) -> Attempt:
    apps = env.settings.chat_apps
    path = "appchat/send" if group else "message/send"
    base = f"{apps.wecom_api_url}/cgi-bin/{path}"
    if not (apps.wecom_corp_id and apps.wecom_corp_secret and apps.wecom_agent_id):
        return Attempt(ok=False, retryable=False, endpoint=base, error=(
            "wecom_app needs DUTYLINE_WECOM_CORP_ID, DUTYLINE_WECOM_CORP_SECRET and "
            "DUTYLINE_WECOM_AGENT_ID"))
    if not out.address:
        return Attempt(ok=False, retryable=False, endpoint=base,
                       error="the recipient has no WeCom user id (im.wecom)")
    token = await _fetch_token(env)
    if isinstance(token, Attempt):
        return token
    text = str(out.content.get("text", "")).encode("utf-8")[:MAX_BYTES].decode("utf-8", "ignore")
    body: dict[str, Any] = {"msgtype": "text", "text": {"content": text}, "safe": 0}
    if group:
        body["chatid"] = out.address
    else:
        body.update(touser=out.address, agentid=apps.wecom_agent_id,
                    enable_duplicate_check=1, duplicate_check_interval=1800)
    url = f"{base}?{urlencode({'access_token': token})}"
    attempt = await post(env, url, dumps(body).encode(), {}, endpoint=redact_url(url))
    attempt.error = attempt.error.replace(token, "******")
    if not attempt.ok:
        return attempt
    code = response_field(attempt, "errcode")
    if code != "0":
        attempt.ok = False
        attempt.error = f"wecom: errcode {code or '?'}: {response_field(attempt, 'errmsg')}"
        attempt.retryable = code in TOKEN_REFUSED or code in RETRYABLE
        if code in TOKEN_REFUSED:
            app_tokens.forget(_key(env))  # revoked or expired early: a fresh one next time
    elif not group and out.address in response_field(attempt, "invaliduser").split("|"):
        attempt.ok, attempt.retryable = False, False
        attempt.error = f"wecom: unknown user id {out.address}"
    else:
        attempt.message_id = response_field(attempt, "msgid")
    return attempt


async def send_personal(env: SendEnv, out: Outgoing) -> Attempt:
    return await _send(env, out, group=False)


async def send_group(env: SendEnv, out: Outgoing) -> Attempt:
    return await _send(env, out, group=True)
