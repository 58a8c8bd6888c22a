"""Matplotlib figures as SVG for the report: hover titles, layer tags, ids unique per page.

A plot marks the artists a reader may hover (a point, a bar, a curve) with a *tip*: matplotlib
writes an artist's ``gid`` as the ``id`` of its ``<g>``, and :func:`figure_svg` turns each
marked group into ``<g class="tip" data-layer="...">`` with a ``<title>`` child (the text a
browser shows on hover, in the page and in the standalone file alike). Every other ``id`` is
dropped unless something refers to it (clip paths, markers), and those are prefixed with the
figure's name, so several figures can be inlined in one HTML page without clashing. The
global ``<style>`` matplotlib puts in the SVG (``*{stroke-linejoin...}``) is removed: the
page scopes it to its figures (:data:`FIGURE_CSS`). Text stays text (``svg.fonttype:
none``), so it is searchable and small; ids are salted with a constant, so the output is
deterministic. Nothing refers to a file or a network address: the SVG opens offline.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass

import matplotlib
from matplotlib.figure import Figure

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)

TIP_PREFIX = "vnbtip"
"""The ``gid`` prefix of the artists that carry a tip (see :func:`tip_gid`)."""

FIGURE_CSS = ".chart svg * { stroke-linejoin: round; stroke-linecap: butt; }"
"""What matplotlib's own SVG style said, scoped to the report's figures."""

_URL = re.compile(r"url\(#([^)]+)\)")


@dataclass(frozen=True)
class Tip:
    """What a reader sees when hovering an artist, and the layer it belongs to (if any)."""

    text: str
    layer: str = ""


def tip_gid(number: int) -> str:
    """The ``gid`` of the ``number``-th tip of a figure."""
    return f"{TIP_PREFIX}{number}"


def _tag(element: ET.Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def _render(figure: Figure) -> bytes:
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "vnetbench"}):
        figure.savefig(buf, format="svg", bbox_inches="tight", facecolor="white",
                       metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def _referenced(root: ET.Element) -> set[str]:
    found: set[str] = set()
    href = f"{{{XLINK_NS}}}href"
    for element in root.iter():
        for name, value in element.attrib.items():
            if name in (href, "href") and value.startswith("#"):
                found.add(value[1:])
            found.update(_URL.findall(value))
    return found


def figure_svg(figure: Figure, tips: Mapping[str, Tip], prefix: str) -> str:
    """The figure as one ``<svg>`` element (no XML declaration) with the ``tips`` (by gid)
    attached; the ids it keeps start with ``prefix``."""
    root = ET.fromstring(_render(figure))
    used = _referenced(root)
    href = f"{{{XLINK_NS}}}href"
    parents = {child: parent for parent in root.iter() for child in parent}
    for element in list(root.iter()):
        tag = _tag(element)
        if tag in {"metadata", "style"}:
            parents[element].remove(element)
            continue
        gid = element.get("id")
        if gid is not None and gid in tips:
            tip = tips[gid]
            del element.attrib["id"]
            element.set("class", "tip")
            if tip.layer:
                element.set("data-layer", tip.layer)
            title = ET.Element(f"{{{SVG_NS}}}title")
            title.text = tip.text
            element.insert(0, title)
        elif gid is not None:
            if gid in used:
                element.set("id", f"{prefix}-{gid}")
            else:
                del element.attrib["id"]
        for name, value in list(element.attrib.items()):
            if name == "d":
                element.set(name, " ".join(value.split()))
            elif name in (href, "href") and value.startswith("#"):
                element.set(name, f"#{prefix}-{value[1:]}")
            elif "url(#" in value:
                element.set(name, _URL.sub(lambda m: f"url(#{prefix}-{m.group(1)})", value))
    root.set("class", "plot")
    text = ET.tostring(root, encoding="unicode")
    # whitespace-only text between elements is matplotlib's indentation: drop it
    return re.sub(r">\s+<", "><", text)


def standalone(svg: str) -> str:
    """An inline ``<svg>`` as a file of its own (with the XML declaration)."""
    return '<?xml version="1.0" encoding="utf-8"?>\n' + svg + "\n"
