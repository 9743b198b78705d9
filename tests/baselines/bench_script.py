"""Scripted replies for the bench test, written by us (not recordings of a real model).

One callable answers every method by the call's tag: solver replies carry tiny, fast solvers
(an exact spectral shift for advection, "u stays u0" for Burgers), CePO ratings say 1, and the
first CodePDE generation is a crashing solver so that a debugging round happens.
"""

from __future__ import annotations

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


def make_script(task: str):
    state = {"crashed": False}

    def script(messages, params, index):
        tag = params.tag
        code = None
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
