"""The usage page's two charts, drawn on the server as inline SVG (docs/reference/ui.md §16.3): one bar per UTC
day, stacked by model, a legend inside the SVG. Presentation attributes only (no style attribute)."""

from datetime import date, timedelta
from html import escape

from .. import clock

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 260, 70, 30, 10


def charts(rows, days) -> list:
    today = date.fromisoformat(clock.iso(clock.now())[:10])
    first = today - timedelta(days=days)
    day_list = [(first + timedelta(days=i)).isoformat() for i in range(days + 1)]
    models = sorted({r["model"] or "unknown" for r in rows})
    tokens: dict = {}
    costs: dict = {}
    for r in rows:
        key = (r["day"], r["model"] or "unknown")
        tokens[key] = tokens.get(key, 0) + r["input_tokens"] + r["output_tokens"]
        costs[key] = costs.get(key, 0.0) + r["cost_usd"]
    return [
        _chart(f"Tokens (input + output) per UTC day and model, last {days} days", day_list, models, tokens, lambda v: f"{int(v):,}"),
        _chart(f"Cost in USD per UTC day and model, last {days} days", day_list, models, costs, lambda v: f"${v:,.2f}"),
    ]


def _chart(title, day_list, models, values, label) -> str:
    legend_rows = (len(models) + 3) // 4
    height = HEIGHT + legend_rows * 18
    totals = [sum(values.get((d, m), 0) for m in models) for d in day_list]
    top = max(totals) if totals and max(totals) > 0 else 1
    plot_w, plot_h = WIDTH - LEFT - 10, HEIGHT - BOTTOM - TOP
    bar = plot_w / max(1, len(day_list))
    out = [f'<svg role="img" viewBox="0 0 {WIDTH} {height}" width="100%" preserveAspectRatio="xMinYMin meet" '
           f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']
    out.append(f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - 10}" y2="{TOP + plot_h}" stroke="#666"/>')
    out.append(f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end" font-size="11" fill="currentColor">{escape(label(top))}</text>')
    out.append(f'<text x="{LEFT - 6}" y="{TOP + plot_h}" text-anchor="end" font-size="11" fill="currentColor">{escape(label(0))}</text>')
    for i, d in enumerate(day_list):
        y = TOP + plot_h
        for j, m in enumerate(models):
            v = values.get((d, m), 0)
            if v <= 0:
                continue
            h = plot_h * v / top
            y -= h
            out.append(f'<rect x="{LEFT + i * bar + 1:.1f}" y="{y:.1f}" width="{max(1.0, bar - 2):.1f}" height="{h:.1f}" '
                       f'fill="{COLOURS[j % len(COLOURS)]}"><title>{escape(d)} {escape(m)}: {escape(label(v))}</title></rect>')
        if i == 0 or i == len(day_list) - 1 or (len(day_list) > 8 and i % (len(day_list) // 4) == 0):
            out.append(f'<text x="{LEFT + i * bar + bar / 2:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" '
                       f'font-size="10" fill="currentColor">{escape(d[5:])}</text>')
    for j, m in enumerate(models):
        x = LEFT + (j % 4) * 160
        y = HEIGHT + (j // 4) * 18
        out.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{COLOURS[j % len(COLOURS)]}"/>')
        out.append(f'<text x="{x + 16}" y="{y}" font-size="12" fill="currentColor">{escape(m[:22])}</text>')
    if not models:
        out.append(f'<text x="{LEFT + 10}" y="{TOP + plot_h / 2}" font-size="13" fill="currentColor">No usage in these days</text>')
    out.append("</svg>")
    return "".join(out)
