"""The ratios of a benchmark run, as JSON entries and as a PNG chart; shared
by tools/bench/run.py (CPU devices against numpy and torch) and
tools/gpu/bench.py (the GPU against torch on the same card).

A ratio entry is one dict of the JSON's `ratios` list:

    {"device": "opencl", "workload": "softmax", "size": "4096x4096", "threads": 2,
     "baseline": "numpy", "measure": "speedup", "value": 5.1, "target": 5.0, "meets": true}

`measure` is `speedup` (baseline time / accy time: above 1, accy is faster;
the issue's "≥ 0.6× numpy" is a target of 0.6), `copy fraction` (accy's
bytes per second over the card's copy bandwidth) or `TFLOP/s` (a rate, kept
in the JSON and left out of the chart). `value` is None when a side failed;
`target` is issue 10's (targets.py) or None; `meets` says whether `value`
reaches it (None without a target).

The chart has a panel per device, a group of bars per workload and size,
a bar per baseline (and thread count), drawn from the line at 1.0 on a
log scale, with each target marked over its bar. matplotlib is optional
(`pip install -e '.[bench]'`): without it, `write_results` writes the JSON
and says in one line that there is no chart.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from targets import CALL_US, COPY_FRACTION, OVERHEAD_US, POOL_CHANGES, RSS_GROWTH, SPEEDUP, TFLOPS, TRIP_US
from targets import meets as meets_target

CHARTED = (SPEEDUP, COPY_FRACTION)
#: The y-axis ticks (log scale), those within the panel's range.
TICKS = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 5)]
TARGET_COLOR = "#b2182b"
#: Bar colours, one per series in order of appearance (colour-blind safe).
COLORS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb")


def speedup(accy_s: float | None, baseline_s: float | None) -> float | None:
    """baseline time / accy time; None when either is missing or zero."""
    if not accy_s or not baseline_s:
        return None
    return baseline_s / accy_s


def entry(
    device: str,
    workload: str,
    size: str,
    baseline: str,
    value: float | None,
    target: float | None,
    threads: int | None = None,
    measure: str = SPEEDUP,
) -> dict[str, Any]:
    """One ratio entry (see the module docstring)."""
    meets = None if target is None else meets_target(value, target, measure)
    return {
        "device": device,
        "workload": workload,
        "size": size,
        "threads": threads,
        "baseline": baseline,
        "measure": measure,
        "value": value,
        "target": target,
        "meets": meets,
    }


def describe(e: dict[str, Any]) -> str:
    """`softmax 4096x4096 on opencl (2 threads) vs numpy`."""
    threads = "" if e["threads"] is None else f" ({e['threads']} thread{'s' if e['threads'] != 1 else ''})"
    against = f" vs {e['baseline']}" if e["measure"] in (SPEEDUP, COPY_FRACTION, OVERHEAD_US) else ""
    return f"{e['workload']} {e['size']} on {e['device']}{threads}{against}"


def fmt(value: float | None, measure: str) -> str:
    if value is None:
        return "-"
    if measure in (OVERHEAD_US, CALL_US):
        return f"{value:.1f} us"
    if measure == TRIP_US:
        return f"{value:.1f} us a trip over the kernels"
    if measure == RSS_GROWTH:
        return f"RSS +{value:,.0f} bytes"
    if measure == POOL_CHANGES:
        return f"{value:.0f} pool change(s)"
    return f"{value:.1f} TFLOP/s" if measure == TFLOPS else f"{value:.2f}x" if measure == SPEEDUP else f"{value:.0%}"


def target_summary(ratios: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts of the entries with a target, and one line for each."""
    with_target = [e for e in ratios if e["target"] is not None]
    lines = [
        f"{'met   ' if e['meets'] else 'MISSED'} {describe(e)}: {fmt(e['value'], e['measure'])}"
        f" (target {fmt(e['target'], e['measure'])})"
        for e in with_target
    ]
    met = sum(1 for e in with_target if e["meets"])
    return {"met": met, "missed": len(with_target) - met, "lines": lines}


def chart_path(json_path: str | Path) -> Path:
    """Where the chart of `json_path` goes: beside it, `.png` for `.json`."""
    return Path(json_path).with_suffix(".png")


def write_results(doc: dict[str, Any], json_path: str | Path, title: str) -> Path | None:
    """Writes `doc` (whose `ratios` are entries) as JSON to `json_path`, then
    its chart beside it; the chart's path, or None without one."""
    path = Path(json_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return write_chart(doc["ratios"], chart_path(path), title)


def write_chart(ratios: Sequence[dict[str, Any]], png: str | Path, title: str) -> Path | None:
    """Draws the charted entries of `ratios` into `png`. Without matplotlib
    (or with no entry to draw), prints one line saying so and returns None."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except Exception as e:  # ImportError, or a broken install (e.g. built for another numpy)
        print(f"chart: no PNG, matplotlib is not importable ({type(e).__name__}: {e}); pip install -e '.[bench]'")
        return None
    shown = [e for e in ratios if e["measure"] in CHARTED]
    if not shown:
        print("chart: no PNG, no ratio to chart")
        return None
    devices = list(dict.fromkeys(e["device"] for e in shown))
    series = list(dict.fromkeys(_series(e) for e in shown))
    colors = {s: COLORS[i % len(COLORS)] for i, s in enumerate(series)}
    groups = max(len({(e["workload"], e["size"]) for e in shown if e["device"] == d}) for d in devices)
    bars = max(len([f for f in shown if _group(f) == _group(e) and f["device"] == e["device"]]) for e in shown)
    fig = Figure(figsize=(max(8.0, groups * (0.4 + 0.35 * bars) + 2.0), 1.2 + 3.6 * len(devices)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(devices), 1, squeeze=False)[:, 0]
    for ax, device in zip(axes, devices, strict=True):
        _panel(ax, [e for e in shown if e["device"] == device], colors, device)
    handles, labels = [], []
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in labels:
                handles.append(h)
                labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5), fontsize="small")
    fig.suptitle(title, fontsize="medium")
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    print(f"chart: {png}")
    return Path(png)


def _group(e: dict[str, Any]) -> tuple[str, str]:
    """The bar group of an entry in its device's panel."""
    return e["workload"], e["size"]


def _series(e: dict[str, Any]) -> str:
    """The legend label of an entry's bar: its baseline, thread count and measure."""
    label = e["baseline"]
    if e["threads"] is not None:
        label += f", {e['threads']} thread{'s' if e['threads'] != 1 else ''}"
    if e["measure"] == COPY_FRACTION:
        label += " (fraction of its bandwidth)"
    return label


def _panel(ax: Any, entries: list[dict[str, Any]], colors: dict[str, str], device: str) -> None:
    """One device's bars: a group per (workload, size), a bar per series,
    from 1.0 up (accy faster) or down (slower), log scale."""
    groups = list(dict.fromkeys(_group(e) for e in entries))
    width = 0.8 / max(len([e for e in entries if _group(e) == g]) for g in groups)
    drawn: list[float] = [1.0]
    for x, group in enumerate(groups):
        members = [e for e in entries if _group(e) == group]
        for i, e in enumerate(members):
            at = x + (i - (len(members) - 1) / 2) * width
            label = _series(e)
            if e["value"] is None:
                ax.bar(at, 0.0, width, bottom=1.0, color=colors[label], label=label)
                ax.text(at, 1.0, "failed", ha="center", va="bottom", fontsize="x-small", rotation=90)
            else:
                v = e["value"]
                ax.bar(at, v - 1.0, width, bottom=1.0, color=colors[label], label=label)
                up = v >= 1
                ax.annotate(
                    f"{v:.2f}",
                    (at, v),
                    xytext=(0, 2 if up else -2),
                    textcoords="offset points",
                    ha="center",
                    va="bottom" if up else "top",
                    fontsize="x-small",
                )
                drawn.append(v)
            if e["target"] is not None:
                ax.hlines(
                    e["target"],
                    at - width / 2,
                    at + width / 2,
                    colors=TARGET_COLOR,
                    linewidth=2.5,
                    label="target (issue 10)",
                )
                drawn.append(e["target"])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    low, high = 10 ** (math.log10(min(drawn)) - 0.25), 10 ** (math.log10(max(drawn)) + 0.25)
    ax.set_ylim(low, high)
    ticks = [t for t in TICKS if low <= t <= high]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set_xticks(range(len(groups)), [f"{w}\n{s}" for w, s in groups], fontsize="small")
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylabel("speed vs baseline (log)")
    ax.set_title(f"accy on {device}: baseline time / accy time, above 1 accy is faster", fontsize="small")
    ax.grid(axis="y", alpha=0.25)


def print_rows(rows: list[dict[str, Any]], path: str | None, title: str, table: str) -> None:
    """A side script's rows (dispatch.py, memory.py, rnn.py): as one JSON
    line on stdout when `path` is "-" (what run.py reads), else `title` and
    the `table`, and the JSON in `path` when given."""
    if path == "-":
        print(json.dumps(rows))
        return
    print(title)
    print(table)
    if path:
        with open(path, "w") as f:
            json.dump(rows, f, indent=2)
