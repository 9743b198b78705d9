"""Opt-in pytest plugin: how close each passing numeric assertion came to its bound (issue 28).

    PYTHONPATH=tests PYTHONPYCACHEPREFIX=/tmp/pyc-margins python -m pytest -p margins \
        -o enable_assertion_pass_hook=true --margins-out margins.jsonl

(the separate pycache prefix: pytest rewrites asserts with the pass hook only in freshly
compiled test modules). Every passing ``assert a < b`` / ``a > b`` (chains and ``and`` included)
between numbers, every ``pytest.approx`` and every ``numpy.allclose`` / ``assert_allclose`` is
recorded per test and call site as observed / bound (1 = at the bound); ``python tests/margins.py
margins.jsonl`` lists the sites above 0.5, i.e. within 2x of their bound."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

_F = r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
# an operand: a number, np.float64(number), or (number / number) as pytest shows a quotient
_OPD = (r"(?:np\.float(?:64|32)\((" + _F + r")\)|\((" + _F + r")\s*([/*])\s*(" + _F + r")\)|(" + _F
        + r"))")
_CMP = re.compile(r"(?<![\w.)/*+-])" + _OPD + r"\s*(<=|>=|<|>)\s*" + _OPD + r"(?![\w.(/*+-])")
_TESTS = str(Path(__file__).resolve().parent)
_records: dict[tuple[str, str], dict] = {}
_current: list[str] = [""]


def pytest_addoption(parser):
    parser.addoption("--margins-out", default="margins.jsonl",
                     help="where the margins plugin writes its records (one file per worker)")


def _site() -> str:
    f = sys._getframe(2)
    while f is not None and not f.f_code.co_filename.startswith(_TESTS):
        f = f.f_back
    return "?" if f is None else f"{Path(f.f_code.co_filename).name}:{f.f_lineno}"


def _record(site: str, ratio: float, text: str) -> None:
    if not np.isfinite(ratio):
        return
    key = (_current[0], site)
    old = _records.get(key)
    if old is None or ratio > old["ratio"]:
        _records[key] = {"test": _current[0], "site": site, "ratio": float(ratio), "text": text[:200]}


def _ratio(a: float, op: str, b: float) -> float | None:
    if a <= 0 or b <= 0:
        return None
    return a / b if op in ("<", "<=") else b / a


def _operand(g) -> float:
    if g[0] is not None:
        return float(g[0])
    if g[1] is not None:
        x, y = float(g[1]), float(g[3])
        return x / y if g[2] == "/" and y else x * y
    return float(g[4])


def pytest_assertion_pass(item, lineno, orig, expl):
    first = expl.splitlines()[0] if expl else ""
    pos = 0
    while (m := _CMP.search(first, pos)) is not None:
        pos = m.end(6)  # a chain a < b < c: b starts the next comparison
        g = m.groups()
        a, op, b = _operand(g[0:5]), g[5], _operand(g[6:11])
        if re.fullmatch(r"-?\d+\s*(<=|>=|<|>)\s*-?\d+", m.group(0)):
            continue  # counts, not measurements
        r = _ratio(a, op, b)
        if r is not None:
            _record(f"{Path(str(item.fspath)).name}:{lineno}", r, f"{orig}  |  {m.group(0)}")


def _patch():
    try:
        from _pytest import approx as python_api
    except ImportError:  # pytest < 9
        from _pytest import python_api

    scalar_eq = python_api.ApproxScalar.__eq__

    def eq(self, actual):
        ok = scalar_eq(self, actual)
        try:
            tol = float(self.tolerance)
            diff = abs(float(actual) - float(self.expected))
            if tol > 0:
                _record(_site(), diff / tol, f"approx({self.expected!r}) vs {actual!r}")
        except Exception:
            pass
        return ok

    python_api.ApproxScalar.__eq__ = eq

    def ratio(a, b, rtol, atol):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        with np.errstate(all="ignore"):
            r = np.abs(a - b) / (atol + rtol * np.abs(b))
        r = r[np.isfinite(r)]
        return float(r.max()) if r.size else 0.0

    allclose = np.allclose

    def allclose_(a, b, rtol=1e-5, atol=1e-8, equal_nan=False):
        ok = allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        try:
            _record(_site(), ratio(a, b, rtol, atol), f"allclose rtol={rtol} atol={atol}")
        except Exception:
            pass
        return ok

    np.allclose = allclose_
    assert_allclose = np.testing.assert_allclose

    def assert_allclose_(actual, desired, rtol=1e-7, atol=0, *args, **kw):
        assert_allclose(actual, desired, rtol, atol, *args, **kw)
        try:
            _record(_site(), ratio(actual, desired, rtol, atol),
                    f"assert_allclose rtol={rtol} atol={atol}")
        except Exception:
            pass

    np.testing.assert_allclose = assert_allclose_


def pytest_configure(config):
    _patch()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    _current[0] = item.nodeid
    try:
        return (yield)
    finally:
        _current[0] = ""


def pytest_unconfigure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out = Path(config.getoption("--margins-out"))
    out = out.with_name(f"{out.stem}.{worker}{out.suffix}")
    with out.open("w") as fh:
        for r in _records.values():
            fh.write(json.dumps(r) + "\n")


if __name__ == "__main__":  # list the sites within 2x of their bound, closest first
    rows = []
    for path in sys.argv[1:]:
        for p in Path(path).parent.glob(Path(path).stem + ".*" + Path(path).suffix):
            rows += [json.loads(line) for line in p.read_text().splitlines()]
    for r in sorted(rows, key=lambda r: -r["ratio"]):
        if r["ratio"] > 0.5:
            print(f"{r['ratio']:7.3f}  {r['test']}  {r['site']}\n         {r['text']}")
