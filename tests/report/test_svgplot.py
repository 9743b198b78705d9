"""The report's figures as written by our own SVG writer: untrusted text from run folders is
inert (XML-escaped, no element or attribute of its own), odd values do not crash a report,
axes are log over decades only when every value is positive, and drawing imports no
matplotlib (issue 28: ~2 s of CPU per solve went to it)."""

from __future__ import annotations

import base64
import math
import subprocess
import sys
from itertools import pairwise
from xml.etree import ElementTree

from pdesharp.report.figures import pareto_svg, round_svg, score_curves
from pdesharp.report.pareto import ParetoPoint, ParetoView

SVG = "{http://www.w3.org/2000/svg}"
# what the writer may emit: nothing that runs, links or fetches
TAGS = {"svg", "rect", "path", "circle", "polygon", "text", "g"}
ATTRS = {"x", "y", "width", "height", "viewBox", "font-family", "font-size", "fill", "stroke",
         "stroke-width", "stroke-dasharray", "d", "cx", "cy", "r", "points", "text-anchor",
         "transform", "class"}
HOSTILE = ('x<script>alert(1)</script>&amp;"q\' ]]><a href="javascript:1">'
           '<image href="http://h/b"/>\x1b[31m\x00\ud800\ufffe')


def _decode(uri: str) -> bytes:
    assert uri.startswith("data:image/svg+xml;base64,")
    return base64.b64decode(uri.split(",", 1)[1])


def _view(points) -> ParetoView:
    pts = [ParetoPoint(id=i, title=HOSTILE, score=s, per_sample=t) for i, s, t in points]
    for p in pts:
        p.front = True
    pts[0].winner = True
    return ParetoView(points=pts)


def _inert(data: bytes) -> str:
    """The figure's text, after checking it parses and holds only what the writer means to."""
    # (the words "href" and "javascript" may appear as text, escaped: never as markup)
    assert data.startswith(b"<?xml") and b"<script" not in data and b"<a " not in data
    root = ElementTree.fromstring(data)
    assert root.tag == SVG + "svg" and root.get("viewBox") and root.get("width")
    for el in root.iter():
        assert el.tag.startswith(SVG) and el.tag[len(SVG):] in TAGS, el.tag
        assert set(el.attrib) <= ATTRS, el.attrib
        assert not any("javascript" in v or "url(" in v or "href" in v
                       for v in el.attrib.values())
    return "\n".join(root.itertext())


def test_untrusted_ids_titles_and_names_stay_text():
    shown = HOSTILE.replace("\x1b[31m", "").replace("\x00", "").replace("\ud800", "")
    shown = shown.replace("\ufffe", "")
    figures = [
        pareto_svg(_view([(HOSTILE, 1e-3, 0.01), ("b", 2e-4, 0.1)]), metric=HOSTILE,
                   title=HOSTILE, bar=5e-3),
        round_svg([(HOSTILE, 3e-4), ("round 1", 1e-4)], title=HOSTILE),
        _decode(score_curves({HOSTILE: [(1, 1e-2), (2, 1e-3)]}, title=HOSTILE, ylabel=HOSTILE)),
    ]
    for data in figures:
        text = _inert(data)
        # shown as written, minus the characters XML cannot carry (controls, surrogates)
        assert shown in text


def test_non_finite_and_non_positive_values_do_not_crash():
    nan, inf = math.nan, math.inf
    # nothing placeable: no figure rather than an exception
    assert pareto_svg(_view([("a", nan, 0.1), ("b", 1e-3, inf)]), metric="m", title="t") is None
    assert round_svg([("genesis", nan), ("round 1", None)], title="t") is None
    assert score_curves({"a": [(1, nan), (2, inf)], "b": []}, title="t") is None
    # the finite ones drawn; a zero or negative score makes the axis linear (0 is not on a log
    # axis), and a huge value does not overflow the decade limits
    data = pareto_svg(_view([("a", 0.0, 0.1), ("b", -1e-3, 0.2), ("c", nan, 0.3),
                             ("d", 2e-3, 1.5e308)]), metric="m", title="t", bar=-1.0)
    _inert(data)
    root = ElementTree.fromstring(data)
    ys = [float(t.text) for t in root.iter(SVG + "text") if t.get("class") == "ytick"]
    assert min(ys) < 0 < max(ys)  # linear: ticks on both sides of zero
    root = ElementTree.fromstring(_decode(score_curves({"a": [(1, 0.0), (2, 3e-14)]},
                                                       title="t")))
    ys = [t.text for t in root.iter(SVG + "text") if t.get("class") == "ytick"]
    assert len(ys) >= 3 and len(set(ys)) == len(ys) and "0" in ys, ys  # tiny: still apart
    _inert(_decode(score_curves({"a": [(1, 0.0), (2, nan), (3, 5.0)]}, title="t")))
    _inert(round_svg([("genesis", 1e-300), ("round 1", 1e300), ("round 2", inf)], title="t"))


def test_axes_are_log_at_decades_when_positive_and_evaluations_are_integers():
    root = ElementTree.fromstring(_decode(score_curves(
        {"run": [(1, 3e-2), (2, 3e-2), (5, 2e-4), (11, 1.5e-4)]}, title="t")))
    xt = [t.text for t in root.iter(SVG + "text") if t.get("class") == "xtick"]
    yt = [float(t.text) for t in root.iter(SVG + "text") if t.get("class") == "ytick"]
    assert xt and all(s.isdigit() for s in xt)  # counts: no "2.5"
    # log: labels at whole decades covering the data (1e-4 .. 1e-1); equally spaced in pixels
    assert yt == [1e-4, 1e-3, 1e-2, 1e-1] or yt == [1e-1, 1e-2, 1e-3, 1e-4]
    pos = sorted(float(t.get("y")) for t in root.iter(SVG + "text") if t.get("class") == "ytick")
    gaps = [b - a for a, b in pairwise(pos)]
    assert max(gaps) - min(gaps) < 0.2, gaps
    # one post-step line per curve: horizontal then vertical moves only
    curve = [p.get("d") for p in root.iter(SVG + "path") if p.get("stroke-width") == "1.4"]
    moves = {tok[0] for tok in curve[0].split() if tok[0].isalpha()}  # curve[1]: its key
    assert len(curve) == 2 and moves == {"M", "H", "V"}, curve
    assert len(list(root.iter(SVG + "circle"))) == 4 + 1  # a marker per point, one in the key
    # pareto axes: decades plus the compact 2s and 5s
    root = ElementTree.fromstring(pareto_svg(
        _view([("a", 1e-3, 0.011), ("b", 3e-4, 0.08)]), metric="m", title="t"))
    xt = [t.text for t in root.iter(SVG + "text") if t.get("class") == "xtick"]
    assert xt == ["0.01", "0.02", "0.05", "0.1"]


def test_drawing_a_report_imports_no_matplotlib():
    code = ("import sys, pdesharp.reporter, pdesharp.report.html\n"
            "from pdesharp.report.figures import score_curves\n"
            "score_curves({'a': [(1, 1e-3), (2, 1e-4)]}, title='t')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
