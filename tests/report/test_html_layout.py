"""What a reader sees in the HTML report, measured in headless Chromium and on the figures
(issue 20's report rows): the winner's label is readable in the lineage tree, a score such as
3.035e-04 never wraps, the Pareto legend covers no solver, the per-round chart sits on whole
decades, and a 2D winner gets its figure instead of "the winner did not run"."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from pdesharp.report.figures import decade_limits, pareto_figure, round_figure
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


def test_pareto_legend_covers_no_point():
    view = _view()
    fig = pareto_figure(view, metric="nRMSE", title="t", bar=3e-3)
    fig.canvas.draw()
    ax = fig.axes[0]
    box = ax.get_legend().get_window_extent()
    xy = ax.transData.transform([(p.per_sample, p.score) for p in view.points])
    inside = [p.id for p, (x, y) in zip(view.points, xy)
              if box.x0 - 5 <= x <= box.x1 + 5 and box.y0 - 5 <= y <= box.y1 + 5]
    assert inside == []


def test_round_chart_reads_against_whole_decades():
    values = [3.035e-4, 2.9e-4, 1.2e-4]
    fig = round_figure([("genesis", values[0]), ("round 1", values[1]), ("round 2", values[2])],
                       title="t")
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert ax.get_yscale() == "log" and lo <= min(values) and hi >= max(values)
    for v in (lo, hi):
        assert math.isclose(math.log10(v), round(math.log10(v)), abs_tol=1e-9)  # decades
    assert not ax.patches  # points, not bars whose length depends on the axis' start
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

    from pdesharp.data.generate import generate_to_file
    from pdesharp.records import Candidate
    from pdesharp.store import RunStore
    from pdesharp.task import load_task
    from test_html_report import MarkerEvaluator

    task = load_task("heat2d")
    dev = generate_to_file(task, 1, 0, out=tmp_path / "dev.hdf5", nx=16)
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
