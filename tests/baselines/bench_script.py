"""Scripted replies for the bench test, written by us (not recordings of a real model).

One callable answers every method by the call's tag: solver replies carry tiny, fast solvers
(an exact spectral shift for advection, "u stays u0" for Burgers), CePO ratings say 1, and the
first CodePDE generation is a crashing solver so that a debugging round happens.
"""

from __future__ import annotations

import json

SHIFT = '''import numpy as np

def solver(u0_batch, t_coordinate, beta):
    B, N = u0_batch.shape
    k = np.fft.rfftfreq(N, d=1.0 / N)
    U = np.fft.rfft(u0_batch, axis=1)
    out = np.empty((B, len(t_coordinate), N))
    for i, t in enumerate(t_coordinate):
        out[:, i] = np.fft.irfft(U * np.exp(-2j * np.pi * k * beta * t), n=N, axis=1)
    return out{extra}
'''

FROZEN = '''import numpy as np

def solver(u0_batch, t_coordinate, nu):
    u0 = np.asarray(u0_batch, dtype=float)
    return np.repeat(u0[:, None, :], len(t_coordinate), axis=1){extra}
'''

CRASH = '''import numpy as np

def solver(*args):
    raise RuntimeError("scripted crash: dt is undefined")
'''


def solver_code(task: str, variant: str) -> str:
    # ``variant`` makes each method's code distinct text (the store de-duplicates identical code
    # within a run only, but distinct code keeps the lineage readable).
    body = SHIFT if task == "advection" else FROZEN
    return body.format(extra=f"\n\n# variant: {variant}")


def _json(obj) -> str:
    return "```json\n" + json.dumps(obj) + "\n```"


def sharp_reply(task: str, tag: str) -> str:
    """PDE-SHARP's roles (analysis, genesis, one judged round, narrative), scripted by us."""
    if tag == "analysis.classification":
        return "Scripted classification.\n" + _json({
            "time_order": 1, "space_order": 2 if task == "burgers" else 1,
            "linear": task != "burgers", "pde_type": "hyperbolic" if task == "advection"
            else "parabolic", "boundary": "periodic", "notes": "scripted"})
    if tag.startswith("analysis.") and tag != "analysis.stability":
        return "Scripted step.\n" + _json({"applies": False, "method": "", "summary": "scripted"})
    if tag == "analysis.stability":
        return "Scripted bound.\n" + _json({
            "bounds": [{"scheme": "explicit upwind", "expression": "dx", "note": "scripted"}],
            "recommended_schemes": ["scripted scheme"], "key_facts": ["scripted fact"]})
    if tag == "genesis":
        return "Title: scripted design\n\n```python\n" + solver_code(task, "sharp-genesis") + "```"
    if tag == "judge.nominate":
        return "Scripted ranking.\n" + _json({"ranking": ["g1"], "reasons": {"g1": "only one"},
                                              "nominee": "g1"})
    if tag == "judge.propose":
        return ("<<<<<<< SEARCH\n# variant: sharp-genesis\n=======\n# variant: sharp-patched\n"
                ">>>>>>> REPLACE\n" + _json({"title": "scripted patch", "justification": "x",
                                               "parents": ["g1"]}))
    if tag == "reporter":
        return "Scripted narrative."
    raise AssertionError(f"no scripted sharp reply for tag {tag!r}")


def make_script(task: str):
    state = {"crashed": False}

    def script(messages, params, index):
        tag = params.tag
        code = None
        if tag.split(".")[0] in ("analysis", "genesis", "judge", "reporter"):
            return sharp_reply(task, tag)
        if tag.endswith(".rating"):
            return "The response is complete. Rating: [[1]]"
        if tag.endswith((".critique", ".plan", ".execute", ".review", ".candidate")):
            if tag.endswith(".candidate"):
                code = solver_code(task, "moa-candidate")
            else:
                return f"scripted {tag.rsplit('.', 1)[1]} text"
        if code is None:
            method = tag.split(".")[0]
            if tag == "codepde.generate" and not state["crashed"]:
                state["crashed"] = True
                code = CRASH
            else:
                code = solver_code(task, f"{method}-{tag.rsplit('.', 1)[1]}")
        text = f"Plan: scripted.\n\n```python\n{code}```\n"
        if tag.startswith("cot."):
            text = f"<thinking>scripted<reflection>ok</reflection></thinking><output>{text}</output>"
        return text

    return script
