"""What a task file cannot express, said in one line naming the construct.

A task is a system of PDEs on a fixed box (a finite interval per axis x, y, z), with local
operators (derivatives of integer order of the unknowns and of expressions of them) and
conditions on the box's sides. A user who brings an unbounded domain, an integral or other
nonlocal operator, coupled subdomains, a moving boundary, a delay, a fractional derivative, a
point source or noise gets a verdict that names it (``pdesharp tasks check``, and every command
that loads a task), not a list of validation errors about undeclared names.

The raw mapping of the task file is read as data: formulas are parsed with :mod:`ast` and only
looked at (never evaluated), and what is quoted back is cut to one line (:mod:`pdesharp.untrusted`).
"""

from __future__ import annotations

import ast
import math
import re

from pdesharp.untrusted import one_line

# calls that mean an integral or a nonlocal operator
NONLOCAL = {"integrate", "integral", "Integral", "int", "quad", "conv", "convolve",
            "convolution", "hilbert", "Hilbert", "fft", "ifft", "mean", "average", "avg",
            "nonlocal", "kernel", "norm", "Sum", "sum", "trapz", "trapezoid", "cumsum"}
FRACTIONAL = {"frac", "fractional", "fractional_laplacian", "fraclap", "riesz", "caputo",
              "riemann_liouville"}
POINT = {"delta", "DiracDelta", "dirac", "Dirac"}
NOISE = {"noise", "white_noise", "randn", "rand", "random", "dW", "xi_noise", "brownian"}
# (laplace/laplacian, gradient/grad, divergence/div, gradient_squared, dot/inner are operators
# of the equation reader, pdesharp.equation)
VECTOR = {"lap": "laplace(u)", "Laplacian": "laplace(u)", "curl": "dx(v) - dy(u)",
          "nabla": "gradient(u)", "Delta": "laplace(u)"}
SUBDOMAIN_KEYS = {"subdomains", "domains", "interface", "interfaces", "regions", "layers"}
MOVING_KEYS = {"free_boundary", "moving_boundary", "stefan", "front"}
PREAMBLE = ("cannot be expressed in a task file (a PDE on a fixed box with local operators;"
            " docs/tasks.md, 'What a task can express')")


def inexpressible(data) -> str | None:
    """The construct that no task file can express, in a phrase naming it; None if none is
    recognised (the ordinary validation errors then say what is wrong)."""
    if not isinstance(data, dict):
        return None
    for key in data:
        k = str(key).lower()
        if k in SUBDOMAIN_KEYS:
            return f"coupled subdomains (the key {one_line(key, 40)!s})"
        if k in MOVING_KEYS:
            return f"a moving boundary (the key {one_line(key, 40)!s})"
    got = _domain(data.get("domain"))
    if got:
        return got
    eq = data.get("equation")
    texts = eq.get("equations") if isinstance(eq, dict) else eq
    texts = [texts] if isinstance(texts, str) else texts if isinstance(texts, list) else []
    for text in texts:
        got = _formula(text) if isinstance(text, str) else None
        if got:
            return got
    bc = data.get("boundary")
    if isinstance(bc, str):
        return _boundary(bc, data.get("domain"))
    return None


def _domain(dom) -> str | None:
    if isinstance(dom, list):
        return f"coupled subdomains (a list of domains: {one_line(dom, 80)})"
    if not isinstance(dom, dict):
        return None
    for axis, rng in dom.items():
        if str(axis) not in ("x", "y", "z"):
            return (f"the axis {one_line(axis, 20)} (tasks use Cartesian x, y, z; write a"
                    " radial or angular operator out in x, y)")
        if isinstance(rng, list) and any(isinstance(r, list) for r in rng):
            return f"coupled subdomains ({one_line(axis, 20)}: {one_line(rng, 80)})"
        if not isinstance(rng, list):
            continue
        for end in rng:
            if isinstance(end, float) and not math.isfinite(end):
                return f"an unbounded domain ({axis}: {one_line(rng, 60)})"
            if isinstance(end, str):
                if re.search(r"\b(inf|infinity|oo)\b", end, re.I):
                    return f"an unbounded domain ({axis}: {one_line(rng, 60)})"
                if re.search(r"\bt\b", end):  # (2*(L + 1) is a number: pdesharp.task_values)
                    return f"a moving boundary ({axis}: {one_line(rng, 60)})"
    return None


def _calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            yield node, node.func.id


def _formula(text: str) -> str | None:
    from pdesharp.expression import split_equation

    for part in split_equation(text[:4000]):
        try:
            tree = ast.parse(part.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node, name in _calls(tree):
            shown = one_line(ast.get_source_segment(part.strip(), node) or name, 60)
            if name in NONLOCAL:
                return f"an integral or nonlocal operator ({shown})"
            if name in FRACTIONAL:
                return f"a fractional derivative ({shown})"
            if name in POINT:
                return f"a point source ({shown}; spread it over a few cells, e.g. exp(-((x - x0)/w)**2))"
            if name in NOISE:
                return f"a stochastic term ({shown})"
            if name in VECTOR:
                return (f"the vector operator {name}(...) ({shown}); write {VECTOR[name]}"
                        " or the components (dx(u, 2) + dy(u, 2))")
            if re.fullmatch(r"d[a-z]", name) and name[1] not in "xyzt":
                return (f"the derivative {shown} along {name[1]} (the axes are x, y, z and t;"
                        " a radial operator is written out in x, y)")
            if re.fullmatch(r"d[xyzt]", name) and len(node.args) > 1:
                order = node.args[1]
                if isinstance(order, ast.Constant) and isinstance(order.value, float) \
                        and not float(order.value).is_integer():
                    return f"a fractional derivative ({shown})"
                if isinstance(order, ast.BinOp) and isinstance(order.op, ast.Div):
                    return f"a fractional derivative ({shown})"
            if len(node.args) >= 1 and not node.keywords and name not in _KNOWN \
                    and any(_shifted(a) for a in node.args):
                return (f"the unknown {name} evaluated elsewhere ({shown}: a delay or a nonlocal"
                        " term)")
    return None


def _shifted(arg) -> bool:
    """An argument such as t - tau or x + 1: a field evaluated away from the point."""
    return isinstance(arg, ast.BinOp) and any(isinstance(s, ast.Name) and s.id in "xyzt"
                                              for s in (arg.left, arg.right))


def _known():
    from pdesharp.expression import ALIASES, FUNCTIONS

    return set(FUNCTIONS) | set(ALIASES) | {"dt", "dx", "dy", "dz", "dn"}


_KNOWN = _known()


def _boundary(text: str, dom) -> str | None:
    if re.search(r"\b(as|when)\s+[xyz]\s*->|\b[xyz]\s*=\s*[+-]?\s*(inf|infinity|oo)\b",
                 text, re.I):
        return f"a condition at infinity ({one_line(text, 80)})"
    if isinstance(dom, dict):
        for m in re.finditer(r"\b([xyz])\s*=\s*([^:;,]+):", text):
            axis, value = m.group(1), m.group(2).strip()
            rng = dom.get(axis)
            if re.search(r"\bt\b|[a-zA-Z_]\w*\s*\(", value):
                return f"a moving boundary ({axis} = {one_line(value, 40)})"
            try:
                v = float(value)
            except ValueError:
                continue
            if isinstance(rng, list) and len(rng) == 2 and all(
                    isinstance(r, (int, float)) for r in rng) and min(rng) < v < max(rng):
                return (f"an interface inside the domain ({axis} = {one_line(value, 20)}:"
                        " coupled subdomains)")
    for node_text in re.split(r"[;,]", text):
        got = _formula(node_text.split(":")[-1]) if "(" in node_text else None
        if got and got.startswith("an integral"):
            return f"a nonlocal boundary condition: {got}"
    return None


def verdict(name: str, data) -> str | None:
    """The one-line verdict for a task file, or None."""
    what = inexpressible(data)
    if what is None:
        return None
    if what.startswith("the vector operator"):  # expressible, written in components
        return f"{one_line(name, 60)}: {what}."
    return f"{one_line(name, 60)}: {what} {PREAMBLE}."
