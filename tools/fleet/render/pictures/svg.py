"""A small SVG writer: integer coordinates only, every text and attribute value escaped
(:func:`fleet.render.escape.xml_text`), one element per line, nothing that varies between
two renders of one inventory."""

from __future__ import annotations

from fleet.render.escape import xml_text
from fleet.render.header import TEXT

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
INK = "#1a1a1a"
MUTED = "#6b6b6b"
LINE = "#4d4d4d"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (an ellipsis marks the cut)."""
    return text if len(text) <= limit else text[: max(limit - 1, 1)] + "\u2026"


class Svg:
    """An SVG document built element by element; :meth:`done` returns its text."""

    def __init__(self, width: int, height: int, title: str) -> None:
        self.width, self.height = width, height
        self._lines = [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f"<!-- {TEXT} -->",
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="{FONT}" fill="{INK}">',
            f"<title>{xml_text(title, 'a picture title')}</title>",
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        ]

    def rect(self, x: int, y: int, w: int, h: int, fill: str, *, stroke: str = LINE,
             dashed: bool = False, tip: str | None = None) -> None:
        dash = ' stroke-dasharray="4 3"' if dashed else ""
        attrs = (f'x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}" '
                 f'stroke="{stroke}" stroke-width="1"{dash}')
        if tip is None:
            self._lines.append(f"<rect {attrs}/>")
        else:  # a tooltip: the title child
            self._lines.append(f"<rect {attrs}><title>{xml_text(tip, 'a tooltip')}</title>"
                               "</rect>")

    def text(self, x: int, y: int, value: str, *, size: int = 12, anchor: str = "start",
             bold: bool = False, fill: str = INK) -> None:
        weight = ' font-weight="bold"' if bold else ""
        self._lines.append(f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}"'
                           f' fill="{fill}"{weight}>{xml_text(value, "a label")}</text>')

    def line(self, x1: int, y1: int, x2: int, y2: int, *, stroke: str = LINE) -> None:
        self._lines.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" '
                           f'stroke="{stroke}" stroke-width="1"/>')

    def legend(self, x: int, y: int, entries: list[tuple[str, str]]) -> int:
        """Colour swatches with their meaning, one a line from (x, y); returns the height."""
        for i, (fill, label) in enumerate(entries):
            self.rect(x, y + 20 * i, 14, 14, fill)
            self.text(x + 20, y + 20 * i + 12, label, size=12)
        return 20 * len(entries)

    def done(self) -> str:
        return "\n".join([*self._lines, "</svg>"]) + "\n"
