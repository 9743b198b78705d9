"""Genesis: N candidate solvers written from the analysis. Nothing is executed here.

Two sampling modes (``--genesis``, recorded in the run with the temperature):

``independent`` (the paper's, the default)
    N identical prompts sampled concurrently (bounded by ``workers``) at ``temperature``, each
    with its own ``sample_index`` so the response cache tells them apart.
``diverse``
    the candidates are written one after another, and each later prompt lists the designs
    already written (title and a line of justification) and asks for a different method.
 The code is the longest ```python block of the
reply (CodePDE's rule). A reply without one gets one re-ask; if that fails too, the sample is
recorded as a failed candidate (empty code, ``static_check`` saying why) and the run goes on.
Each candidate gets a free static check: it parses, defines the solver with the template's
parameter names, and imports only installed modules.
"""

from __future__ import annotations

import ast
import asyncio
import re
from typing import Literal

from pdesharp.facts import TaskFacts
from pdesharp.llm.base import BudgetExceeded, Message
from pdesharp.prompting import (allowed_modules, analysis_context, ask, clean_title,
                                extract_code, render, shorten, strip_label, task_context)
from pdesharp.records import Analysis, Candidate
from pdesharp.task import Task

NO_CODE = "no code block in the reply"
GenesisMode = Literal["independent", "diverse"]
GENESIS_TEMPERATURE = 0.7  # CodePDE's sampling temperature for non-reasoning models


class GenesisBudgetStop(BudgetExceeded):
    """A budget ran out during Genesis; ``candidates`` are the samples completed before."""

    def __init__(self, message: str, candidates: list[Candidate]):
        super().__init__(message)
        self.candidates = candidates


def static_check(code: str, task: Task) -> str:
    """"ok", or the first reason ``code`` cannot be a valid solver for ``task``."""
    if not code.strip():
        return NO_CODE
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"syntax error, line {exc.lineno}: {exc.msg}"
    allowed = allowed_modules()
    for node in _statements(tree.body):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if name.split(".")[0] not in allowed:
                return f"imports {name}, which is not installed"
    spec = task.solver
    wanted = [a.name for a in spec.args]
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == spec.name:
            got = [a.arg for a in node.args.posonlyargs + node.args.args]
            if got != wanted:
                return f"{spec.name} takes ({', '.join(got)}), expected ({', '.join(wanted)})"
            return "ok"
    return f"no top-level function {spec.name}"


def _statements(body: list):
    """Every statement, nested ones included, without the expressions (an import is a
    statement): a tenth of the nodes ast.walk visits in a solver file."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            stack.extend(getattr(node, field, ()) or ())


def title_of(text: str) -> str:
    # [^\w\n], not \W: a run of blank lines must not be rescanned from each of its lines
    m = re.search(r"^[^\w\n]*title[^\w\n]*:\s*(.+)$", text, re.IGNORECASE | re.MULTILINE)
    return clean_title(m.group(1)) if m else ""


def justification_of(text: str) -> str:
    """The prose before the code block, in full (the model's own account of its design), on
    one line, without its title line or a "Justification:" label; prompts that show it
    shorten it at a word boundary (:func:`pdesharp.prompting.shorten`)."""
    head = text.split("```", 1)[0]
    head = re.sub(r"^[^\w\n]*title[^\w\n]*:[^\n]*", "", head, flags=re.IGNORECASE | re.MULTILINE)
    return strip_label(" ".join(head.split()), "justification")


class LLMAuthor:
    """Implements :class:`pdesharp.roles.Author` on a ChatModel."""

    def __init__(self, model, name: str = "author", workers: int = 4, feedback: str = "nrmse",
                 facts: TaskFacts | None = None, mode: GenesisMode = "independent",
                 temperature: float | None = GENESIS_TEMPERATURE, goal: str = ""):
        self.model = model
        # the run's time objective in words (Objective.words), "" under accuracy: a candidate
        # written for the lowest score over-resolves a loose target (a bridge review of KdV
        # under fastest-below:1e-4: 32-64 substeps per frame advised, 3-4 met the target)
        self.goal = goal
        self.name = name
        self.workers = max(1, workers)
        self.feedback = feedback  # what the candidates will be scored on (stated in the prompt)
        self.facts = facts
        self.mode = mode
        self.temperature = temperature

    async def write(self, task: Task, analysis: Analysis, n: int) -> list[Candidate]:
        width = len(str(n))  # g1..g9, or g01..g32: ids sort in order
        ids = [f"g{i + 1:0{width}d}" for i in range(n)]
        if self.mode == "diverse":
            return await self._write_in_turn(task, analysis, ids)
        gate = asyncio.Semaphore(self.workers)

        async def one(i: int) -> Candidate:
            async with gate:
                return await self._sample(task, analysis, i, n, ids[i], [])

        # Every sample runs to its end (no orphan calls); a budget stop keeps what was written.
        out = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
        done = [c for c in out if isinstance(c, Candidate)]
        errors = [e for e in out if isinstance(e, BaseException)]
        other = [e for e in errors if not isinstance(e, BudgetExceeded)]
        if other:
            raise other[0]
        if errors:
            raise GenesisBudgetStop(str(errors[0]), done)
        return done

    async def _write_in_turn(self, task: Task, analysis: Analysis, ids: list[str]
                             ) -> list[Candidate]:
        """Diverse mode: each candidate sees the designs written before it."""
        done: list[Candidate] = []
        for i, cid in enumerate(ids):
            earlier = [{"id": c.id, "title": c.title, "summary": shorten(c.justification, 200)}
                       for c in done if c.code.strip()]
            try:
                done.append(await self._sample(task, analysis, i, len(ids), cid, earlier))
            except BudgetExceeded as exc:
                raise GenesisBudgetStop(str(exc), done) from exc
        return done

    async def _sample(self, task: Task, analysis: Analysis, i: int, n: int, cid: str,
                      earlier: list[dict]) -> Candidate:
        prompt = render("genesis", **task_context(task, self.feedback, self.facts),
                        **analysis_context(analysis, self.facts), index=i + 1, total=n, earlier=earlier,
                        diverse=self.mode == "diverse", goal=self.goal)
        messages = [Message(role="system", content=render("system", role="a solver author")),
                    Message(role="user", content=prompt)]
        text = await ask(self.model, messages, "genesis", sample_index=i,
                         temperature=self.temperature)
        code = extract_code(text)
        if code is None:
            messages += [Message(role="assistant", content=text),
                         Message(role="user", content=render("reask_code",
                                                             signature=task.solver.signature))]
            retry = await ask(self.model, messages, "genesis.reask", sample_index=i,
                              temperature=self.temperature)
            code = extract_code(retry)
            text = text if code is None else retry
        code = code or ""
        return Candidate(id=cid, code=code, origin="genesis", title=title_of(text),
                         justification=justification_of(text), static_check=static_check(code, task))
