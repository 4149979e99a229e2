"""Notification template rendering: the built-in default incident templates, precompiled.

    .venv/bin/python -m bench.template_render [--seconds 3] [--rounds 5]

Renders the default markdown chat template (dingtalk), the default e-mail template
(html/template escaping) and the same e-mail coloured in CSS (a <style> rule and a style
attribute, each with an action: html/template's CSS escaping) against the sample incident
(3 labels, 1 alert) in one process, with the sandbox bounds on, as delivery does
(engine.render). Baseline in the same run: the same markdown message built with a Python
str.format call (no template engine), so the ratio says what the Go-compatible engine costs.
Rates are per CPU second of this process (time.process_time), the median of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from dutyline.notify.template import engine
from dutyline.notify.template.data import sample_data
from dutyline.notify.template.defaults import DEFAULT_BODIES

_FORMAT = (
    "**New incident: {Title}**\n- Severity: {IncidentSeverity}\n- Status: {IncidentStatus} / "
    "{Progress}\n- Channel: {ChannelName}\n- Started: {start}\n- Alerts: {AlertCnt} "
    "({ActiveAlertCnt} active)\n{labels}\n{Description}\n\n[Details]({DetailUrl})"
)


def _baseline(data: dict[str, Any]) -> str:
    labels = "".join(f"- {k}: {v}\n" for k, v in sorted(data["Labels"].items()))
    start = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(data["StartTime"]))
    return _FORMAT.format(labels=labels, start=start, **data)


def _styled_email() -> str:
    """The default e-mail, coloured by severity in CSS rather than with <font color>."""
    color = "{{colorSeverity .IncidentSeverity}}"
    return DEFAULT_BODIES["email"].replace(
        "<html><body>",
        f"<html><head><style>h3 {{ border-left: 4px solid {color} }}</style></head><body>",
    ).replace(f'<font color="{color}">', f'<span style="color:{color};font-weight:bold">') \
        .replace("</font>", "</span>")


def _rate(fn: Callable[[], object], seconds: float) -> float:
    # CPU time of this process: the machine is shared, wall time would count the others
    n, start = 0, time.process_time()
    deadline = start + seconds
    while True:
        for _ in range(200):
            fn()
        n += 200
        now = time.process_time()
        if now >= deadline:
            return n / (now - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    data = sample_data(1_700_000_000, "http://127.0.0.1:8080")
    chat = engine.compile_for("dingtalk", DEFAULT_BODIES["dingtalk"])
    email = engine.compile_for("email", DEFAULT_BODIES["email"])
    styled = engine.compile_for("email", _styled_email())
    assert "color:#C80000;font-weight:bold" in engine.render(styled, data)
    cases: dict[str, Callable[[], object]] = {
        "baseline str.format (markdown)": lambda: _baseline(data),
        "default dingtalk (text/template)": lambda: engine.render(chat, data),
        "default email (html/template)": lambda: engine.render(email, data),
        "email coloured in CSS (html/template)": lambda: engine.render(styled, data),
    }
    results: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, fn in cases.items():  # interleaved, so machine noise hits all alike
            results[name].append(_rate(fn, args.seconds))
    base = statistics.median(results["baseline str.format (markdown)"])
    print(f"{'case':36} {'renders/s (median)':>20} {'min':>10} {'max':>10} {'vs baseline':>12}")
    for name, rates in results.items():
        med = statistics.median(rates)
        print(f"{name:36} {med:20,.0f} {min(rates):10,.0f} {max(rates):10,.0f} "
              f"{med / base:11.3f}x")


if __name__ == "__main__":
    main()
