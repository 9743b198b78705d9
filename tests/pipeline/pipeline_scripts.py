"""Scripted model replies for the pipeline tests.

Every reply here was written by us, the pdesharp developers, to drive specific code paths
(routes, malformed output, failing patches, crashing solvers). None of it is a recording of a
real language model. The solvers are tiny exact-shift advection solvers so that real
evaluations on two dev samples stay fast.
"""

from __future__ import annotations

import asyncio
import json

from pdesharp.records import EvalResult

SHIFT = '''import numpy as np

def solver(u0_batch, t_coordinate, beta):
    B, N = u0_batch.shape
    k = np.fft.rfftfreq(N, d=1.0 / N)
    U = np.fft.rfft(u0_batch, axis=1)
    scale = {scale}
    out = np.empty((B, len(t_coordinate), N))
    for i, t in enumerate(t_coordinate):
        frame = np.fft.irfft(U * np.exp(-2j * np.pi * k * beta * t), n=N, axis=1)
        out[:, i] = frame if i == 0 else scale * frame
    return out
'''

CRASH = '''import numpy as np

def solver(u0_batch, t_coordinate, beta):
    raise RuntimeError("scripted crash: dt is undefined")
'''


def shift(scale: float) -> str:
    return SHIFT.format(scale=scale)


def fenced(lang: str, body: str) -> str:
    return f"```{lang}\n{body.rstrip()}\n```"


def js(obj) -> str:
    return fenced("json", json.dumps(obj))


def classification() -> str:
    return ("Linear first-order hyperbolic transport with periodic boundaries.\n" +
            js({"time_order": 1, "space_order": 1, "linear": True, "pde_type": "hyperbolic",
                "boundary": "periodic", "notes": "pure translation"}))


def route_step(applies: bool, method: str = "") -> str:
    return ("My assessment follows.\n" + js({"applies": applies, "method": method,
                                               "summary": "scripted"}))


def stability() -> str:
    return ("Explicit upwind needs CFL <= 1.\n" + js({
        "bounds": [{"scheme": "explicit upwind", "expression": "dx/abs(beta)", "note": "CFL 1"}],
        "recommended_schemes": ["exact spectral shift"],
        "key_facts": ["the solution is a pure shift by beta*t"]}))


def analysis_replies(route: str) -> dict[str, list[str]]:
    """Analysis replies that lead to ``route``."""
    r = {"analysis.classification": [classification()]}
    order = [("analytical", "analytical"), ("transformation", "transformation"),
             ("decomposition", "hybrid")]
    for step, step_route in order:
        if route == step_route:
            r[f"analysis.{step}"] = [route_step(True, f"{step_route} method")]
            break
        r[f"analysis.{step}"] = [route_step(False)]
    if route != "analytical":
        r["analysis.stability"] = [stability()]
    return r


def analysis_reply(last: str, replies: dict[str, list[str]]) -> str | None:
    """The reply (from :func:`analysis_replies`) to an HTTP request whose last message asks for
    analysis step k of 5 (a server sees no pipeline tags); None for any other request."""
    for n, step in enumerate(("classification", "analytical", "transformation",
                              "decomposition", "stability"), start=1):
        if f"step {n} of 5" in last:
            return replies[f"analysis.{step}"][0]
    return None


def genesis_reply(code: str, title: str) -> str:
    return f"Title: {title}\nA design written by the test.\n\n" + fenced("python", code)


def nominate(nominee: str, ranking=None) -> str:
    ranking = ranking or [nominee]
    return "My ranking.\n" + js({"ranking": ranking, "reasons": {nominee: "scripted"},
                                 "nominee": nominee})


def patch(search: str, replace: str, title: str, parents: list[str]) -> str:
    return (f"Change:\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n" +
            js({"title": title, "justification": f"scripted: {title}", "parents": parents}))


class MarkerEvaluator:
    """Test evaluator that executes nothing: ``scale = X`` in the code gives nRMSE |1 - X| +
    1e-3 (times 7 on the test split); a ``raise`` gives an error result. Counts calls to prove
    de-duplication."""

    def __init__(self, has_test: bool = True):
        self.calls: list[tuple[str, str]] = []
        self.has_test = has_test

    async def evaluate(self, code, *, split, feedback, label="", warm=False):
        self.calls.append((label, split))
        await asyncio.sleep(0)
        if "raise " in code:
            return EvalResult(status="error", split=split, feedback=feedback,
                              message="RuntimeError: scripted crash",
                              stderr_tail="Traceback ...\nRuntimeError: scripted crash")
        scale = float(code.split("scale = ")[1].split()[0]) if "scale = " in code else 0.0
        err = abs(1.0 - scale) + 1e-3
        if split == "test":
            err *= 7  # a distinctive test number, to prove no prompt ever contains it
        return EvalResult(status="ok", split=split, feedback=feedback, n_samples=2,
                          nrmse=err if feedback == "nrmse" else None,
                          residual=err if feedback == "residual" else None, solver_seconds=0.01)


def calls(store, tag: str) -> list[list[dict]]:
    """The messages of every recorded model call with ``tag``, in call order."""
    return [json.loads(m) for (m,) in store.db.execute(
        "SELECT messages FROM model_calls WHERE tag=? ORDER BY seq", (tag,))]


def judge_of(messages) -> str:
    """The judge a call is for: the name that opens its own part of the conversation ("You are
    judge-N, ..."; what comes before it is the same for every judge)."""
    for m in messages:
        role, text = (m["role"], m["content"]) if isinstance(m, dict) else (m.role, m.content)
        if role == "user" and text.startswith("You are judge-"):
            return text.removeprefix("You are ").split(",", 1)[0]
    raise AssertionError("no judge's name in the conversation")


def turn(messages) -> str:
    """The prompt of one call: its user messages since the last reply, joined (a judge
    conversation opens with what every judge is told alike, then the judge's own request).
    ``messages``: journal dicts or :class:`~pdesharp.llm.base.Message` objects."""
    pairs = [(m["role"], m["content"]) if isinstance(m, dict) else (m.role, m.content)
             for m in messages]
    last = max((i for i, (role, _) in enumerate(pairs) if role != "user"), default=-1)
    return "\n\n".join(text for _, text in pairs[last + 1:])


def prompts(store, tag: str) -> list[str]:
    """The prompt (:func:`turn`) of every call with ``tag``, in call order."""
    return [turn(c) for c in calls(store, tag)]


def systems(store, tag: str) -> list[str]:
    """The first message (the system prompt) of every call with ``tag``, in call order."""
    return [c[0]["content"] for c in calls(store, tag)]
