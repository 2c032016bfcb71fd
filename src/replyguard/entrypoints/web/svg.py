"""Charts as inline SVG, drawn on the server: no script, no chart library, readable without
JavaScript, styled by the page's stylesheet (classes, not inline styles: the CSP forbids
those). Every bar carries a <title>, which browsers show on hover."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 640, 160
_TOP, _BOTTOM, _LEFT, _RIGHT = 12, 22, 34, 8
#: The least height of a non-zero piece of a bar, in the chart's units (of HEIGHT).
MIN_BAR = 4.0


@dataclass(frozen=True, slots=True)
class Series:
    name: str  # also the CSS class suffix: .bar-{name}
    label: str
    values: Sequence[int]


def _scale(top_value: float) -> float:
    """A round upper bound for the axis."""
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000):
        if top_value <= step:
            return float(step)
    return float(top_value)


def stacked_bars(
    labels: Sequence[str],
    series: Sequence[Series],
    *,
    limit: int | None = None,
    title: str,
    every_label: bool = False,
) -> Markup:
    """One stacked bar per label; `limit` draws a dashed line (a daily cap). The axis names
    the first, middle and last bar (days), or `every_label` (a few categories)."""
    n = max(len(labels), 1)
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    top = _scale(max([*totals, limit or 0, 1]))
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
    slot = plot_w / n
    bar_w = max(slot * 0.7, 1.0)

    def y(value: float) -> float:
        return _TOP + plot_h - plot_h * value / top

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{_LEFT}" y1="{y(0):.1f}" x2="{WIDTH - _RIGHT}" y2="{y(0):.1f}"/>',
        f'<text class="tick" x="{_LEFT - 6}" y="{y(top) + 4:.1f}" text-anchor="end">{int(top)}</text>',
        f'<text class="tick" x="{_LEFT - 6}" y="{y(0) + 4:.1f}" text-anchor="end">0</text>',
    ]
    for i, day in enumerate(labels):
        x = _LEFT + i * slot + (slot - bar_w) / 2
        bottom = y(0)
        for s in series:
            value = s.values[i]
            if value:
                # A count of 1 against a cap of 100 is 1.3 px: too thin to see. Every non-zero
                # piece is at least MIN_BAR tall (its <title> gives the exact count).
                height = max(plot_h * value / top, MIN_BAR)
                parts.append(
                    f'<rect class="bar bar-{escape(s.name)}" x="{x:.1f}" y="{bottom - height:.1f}" '
                    f'width="{bar_w:.1f}" height="{height:.1f}">'
                    f"<title>{escape(day)}: {value} {escape(s.label)}</title></rect>"
                )
                bottom -= height
    if limit:
        parts.append(
            f'<line class="limit" x1="{_LEFT}" y1="{y(limit):.1f}" x2="{WIDTH - _RIGHT}" y2="{y(limit):.1f}">'
            f"<title>daily cap {limit}</title></line>"
        )
    shown = range(len(labels)) if every_label else sorted({0, len(labels) // 2, len(labels) - 1})
    for i in shown if labels else []:
        x = _LEFT + i * slot + slot / 2
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{HEIGHT - 6}" text-anchor="middle">{escape(labels[i])}</text>'
        )
    parts.append("</svg>")
    # Every piece of text above went through html.escape; the rest is our own markup.
    return Markup("".join(parts))  # noqa: S704
