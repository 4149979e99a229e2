"""A readable API page rendered on the server from the OpenAPI document: no JavaScript,
no assets from the internet, so it works on an air-gapped install."""

from __future__ import annotations

import html
import json
from typing import Any

_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2430;background:#f7f8fa}
header{background:#1d2430;color:#fff;padding:1rem 2rem}
main{max-width:60rem;margin:auto;padding:1rem 2rem}
nav a{display:inline-block;margin:.1rem .6rem .1rem 0}
section{background:#fff;border:1px solid #dde1e7;
border-radius:6px;margin:1rem 0;padding:.5rem 1.2rem}h3 code{font-size:1rem}.perm{color:#8a4b00}
pre{background:#f1f3f6;padding:.6rem;overflow:auto;font-size:13px}table{border-collapse:collapse}
td,th{border-bottom:1px solid #e5e8ec;padding:.2rem .6rem;text-align:left;vertical-align:top}
"""


def _field_rows(schema: dict[str, Any], components: dict[str, Any]) -> str:
    if "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
    props = schema.get("properties") or {}
    if not props:
        return "<p>No fields.</p>"
    required = set(schema.get("required") or [])
    rows = []
    for name, prop in props.items():
        kind = prop.get("type") or prop.get("$ref", "").rsplit("/", 1)[-1] or "object"
        if "anyOf" in prop:
            kind = " | ".join(
                p.get("type") or p.get("$ref", "").rsplit("/", 1)[-1] for p in prop["anyOf"]
            )
        limits = {k: v for k, v in prop.items() if k in (
            "minimum", "maximum", "minLength", "maxLength", "maxItems", "enum", "default")}
        rows.append(
            f"<tr><td><code>{html.escape(name)}</code></td><td>{html.escape(str(kind))}</td>"
            f"<td>{'yes' if name in required else ''}</td>"
            f"<td>{html.escape(json.dumps(limits, ensure_ascii=False)) if limits else ''}</td></tr>"
        )
    return ("<table><tr><th>field</th><th>type</th><th>required</th><th>rules</th></tr>"
            + "".join(rows) + "</table>")


def render(spec: dict[str, Any]) -> str:
    components = spec.get("components", {}).get("schemas", {})
    sections, links = [], []
    for path, item in spec["paths"].items():
        op = item["post"]
        anchor = html.escape(op["operationId"])
        links.append(f'<a href="#{anchor}">{html.escape(path)}</a>')
        body_schema = op["requestBody"]["content"]["application/json"]["schema"]
        perm = op.get("description", "")
        sections.append(
            f'<section id="{anchor}"><h3><code>POST {html.escape(path)}</code></h3>'
            f"<p>{html.escape(op.get('summary', ''))}</p>"
            + (f'<p class="perm">{html.escape(perm)}</p>' if perm else "")
            + "<h4>Request</h4>" + _field_rows(body_schema, components)
            + "</section>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<title>{html.escape(spec['info']['title'])}</title><style>{_STYLE}</style></head><body>"
        f"<header><h1>{html.escape(spec['info']['title'])} {html.escape(spec['info']['version'])}"
        "</h1><p>Every operation: <code>POST</code>, JSON body, <code>?app_key=</code>; "
        "answers <code>{request_id, data}</code> or <code>{request_id, error}</code>. "
        'Machine-readable: <a style="color:#9cf" href="/openapi.json">/openapi.json</a></p>'
        f"</header><main><nav>{''.join(links)}</nav>{''.join(sections)}</main></body></html>"
    )
