"""What a reader sees in the HTML report, measured in headless Chromium and on the figures
(issue 20's report rows): the winner's label is readable in the lineage tree, a score such as
3.035e-04 never wraps, the Pareto legend covers no solver, the per-round chart sits on whole
decades, and a 2D winner gets its figure instead of "the winner did not run"."""

from __future__ import annotations

import json
import math
import subprocess
from xml.etree import ElementTree

import pytest

from pdesharp.report.figures import decade_limits, pareto_svg, round_svg
from pdesharp.report.html import write_report
from pdesharp.report.pareto import ParetoPoint, ParetoView
from test_html_report import _chromium, tournament_run

# Computes, in the rendered page, the lowest text/background contrast inside the winner's tree
# node (WCAG formula) and every numeric cell whose text spans more than one line.
PROBE = """
<script>
function rgb(s) { const m = s.match(/[\\d.]+/g).map(Number); return m.length > 3 ? m : m.concat([1]); }
function lum(c) { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
                  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); }
function background(el) { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor);
                          if (c[3] > 0) return c; } return [255, 255, 255, 1]; }
const out = {contrast: [], wrapped: []};
const node = document.querySelector('.node.winner');
for (const el of [node, ...node.querySelectorAll('*')]) {
  if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
  out.contrast.push([el.className || el.tagName, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)]);
}
for (const td of document.querySelectorAll('td.num')) {
  const r = document.createRange(); r.selectNodeContents(td);
  const tops = new Set([...r.getClientRects()].map(q => Math.round(q.top)));
  if (tops.size > 1) out.wrapped.push(td.textContent);
}
document.body.setAttribute('data-probe', JSON.stringify(out));
</script>
"""


def _probe(html_file, tmp_path, width: int) -> dict:
    probe = html_file.with_name("probe.html")
    probe.write_text(html_file.read_text().replace("</body>", PROBE + "</body>"))
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
           f"--window-size={width},900", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           f"--user-data-dir={tmp_path / 'profile'}", probe.resolve().as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    assert "data-probe=" in dom, dom[-2000:]
    raw = dom.split('data-probe="')[1].split('"')[0]
    return json.loads(raw.replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.skipif(_chromium() is None, reason="chromium not installed")
def test_winner_label_is_readable_and_scores_do_not_wrap(tmp_path):
    run_dir = tournament_run(tmp_path)
    html = write_report(run_dir, plot=False)
    assert "★ winner" in html.read_text()
    for width in (1200, 640):  # a laptop window and a narrow one, where the tables squeeze
        got = _probe(html, tmp_path, width)
        # every text in the winner's node at least WCAG AA for normal text (4.5:1); the old
        # page drew its title and score grey on dark green, about 1.4:1
        assert got["contrast"] and min(c for _, c in got["contrast"]) >= 4.5, got["contrast"]
        assert got["wrapped"] == [], got["wrapped"]


def _view() -> ParetoView:
    # solvers spread over the whole plane (a run with many candidates): there is no empty
    # corner inside the axes for a legend to sit in
    pts = [ParetoPoint(id=f"s{i}{j}", title="", score=float(10.0 ** (-5 + 0.5 * j)),
                       per_sample=float(10.0 ** (-2 + 0.5 * i)))
           for i in range(7) for j in range(7)]
    front = {p.id for p in pts if not any(q.score <= p.score and q.per_sample <= p.per_sample
                                          and q is not p for q in pts)}
    for p in pts:
        p.front = p.id in front
    pts[0].winner = True
    return ParetoView(points=pts)


SVG = "{http://www.w3.org/2000/svg}"


def _svg(data: bytes):
    return ElementTree.fromstring(data)


def _box(rect) -> tuple[float, float, float, float]:
    x, y = float(rect.get("x")), float(rect.get("y"))
    return x, y, x + float(rect.get("width")), y + float(rect.get("height"))


def _markers(root) -> list[tuple[float, float, float]]:
    """(x, y, reach) of every circle and of every star's vertex outside the legend."""
    legend = root.find(f"{SVG}g[@class='legend']")
    keys = set(legend.iter()) if legend is not None else set()
    out = []
    for el in root.iter():
        if el in keys:
            continue
        if el.tag == SVG + "circle":
            out.append((float(el.get("cx")), float(el.get("cy")), float(el.get("r"))))
        elif el.tag == SVG + "polygon":
            out += [(float(x), float(y), 0.0) for x, y in
                    (v.split(",") for v in el.get("points").split())]
    return out


def test_pareto_legend_covers_no_point():
    view = _view()
    root = _svg(pareto_svg(view, metric="nRMSE", title="t", bar=3e-3))
    legend = root.find(f"{SVG}g[@class='legend']")
    x0, y0, x1, y1 = _box(legend.find(f"{SVG}rect"))
    assert [t.text for t in legend.iter(SVG + "text")] == [
        "evaluated solver", "Pareto front", "winner s00", "objective: eligible up to 0.003"]
    marks = _markers(root)
    assert len(marks) >= len(view.points)  # every solver drawn (the front's twice, the star)
    inside = [(x, y) for x, y, r in marks
              if x0 - 5 - r <= x <= x1 + 5 + r and y0 - 5 - r <= y <= y1 + 5 + r]
    assert inside == []
    # and the legend is on the canvas, not cut off by the figure's edge
    assert x1 <= float(root.get("width")) and y1 <= float(root.get("height"))


def test_round_chart_reads_against_whole_decades():
    values = [3.035e-4, 2.9e-4, 1.2e-4]
    names = ["genesis", "round 1", "round 2"]
    root = _svg(round_svg(list(zip(names, values)), title="t"))
    _, top, _, bottom = _box(root.find(f"{SVG}rect[@class='frame']"))
    ticks = {float(t.get("y")): float(t.text) for t in root.iter(SVG + "text")
             if t.get("class") == "ytick"}
    # the labels at the frame's top and bottom edges (drawn 3.5 px below their tick) are the
    # limits: whole decades around the values
    hi = next(v for y, v in ticks.items() if abs(y - 3.5 - top) < 0.5)
    lo = next(v for y, v in ticks.items() if abs(y - 3.5 - bottom) < 0.5)
    assert lo <= min(values) and hi >= max(values)
    for v in (lo, hi):
        assert math.isclose(math.log10(v), round(math.log10(v)), abs_tol=1e-9)  # decades
    # each point sits where a log axis between those limits puts it (0.2 px: the writer
    # rounds coordinates to 0.1 px)
    cys = [float(c.get("cy")) for c in root.iter(SVG + "circle")]
    want = [bottom - (bottom - top) * math.log10(v / lo) / math.log10(hi / lo) for v in values]
    assert len(cys) == 3 and all(abs(a - b) < 0.2 for a, b in zip(cys, want)), (cys, want)
    xs = [float(c.get("cx")) for c in root.iter(SVG + "circle")]
    assert xs == sorted(xs)  # in round order, left to right
    assert [t.text for t in root.iter(SVG + "text") if t.get("class") == "xtick"] == names
    # points joined by a line, not bars whose length depends on the axis' start: the only
    # rectangles are the white background and the frame
    assert len(list(root.iter(SVG + "rect"))) == 2
    assert decade_limits([5.0]) == (1.0, 10.0)


HEAT2D = '''import numpy as np

def solver(u0_batch, t_coordinate, nu):
    k = 2 * np.pi * np.fft.fftfreq(u0_batch.shape[1], d=1.0 / u0_batch.shape[1])
    k2 = k[:, None] ** 2 + k[None, :] ** 2
    U = np.fft.fft2(u0_batch)
    return np.stack([np.real(np.fft.ifft2(U * np.exp(-nu * k2 * t))) for t in t_coordinate],
                    axis=1)
# SCORE 1e-8
'''


def test_a_2d_winner_gets_its_figure_not_did_not_run(tmp_path):
    import asyncio

    from test_html_report import MarkerEvaluator

    from pdesharp.data.generate import generate_to_file
    from pdesharp.records import Candidate
    from pdesharp.store import RunStore
    from pdesharp.task import load_task

    task = load_task("heat2d")
    # no reference-error estimate (finer runs of the sample): the figure is what is checked
    dev = generate_to_file(task, 1, 0, out=tmp_path / "dev.hdf5", nx=16, check_samples=0)
    store = RunStore.create(tmp_path, task=task, run_id="h2",
                            config={"model": "scripted", "feedback": "nrmse",
                                    "dev_data": str(dev)})
    cand = Candidate(id="g01", code=HEAT2D, origin="genesis", title="spectral")
    store.add_candidate(cand)
    asyncio.run(store.evaluate(MarkerEvaluator(), cand, split="dev", feedback="nrmse"))
    store.set_status("finished")
    store.write_summary(best_dev_score=1e-8, best_id="g01", best_solver="g01")
    store.close()
    html = write_report(tmp_path / "h2").read_text()  # the figure: one real sandboxed run
    assert 'id="winner-plot"' in html and "did not run" not in html
    assert (tmp_path / "h2" / "plots" / "winner-dev.png").is_file()
