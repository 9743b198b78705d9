"""Rendering the Jinja2 prompt templates and reading structure back out of model replies.

Templates live in ``pdesharp/prompts/*.j2`` and are rendered with ``StrictUndefined``: a
template that names a variable the caller did not pass is a bug and fails loudly. Every
prompt that asks for code includes ``_task.j2``: the task description, the solver template,
the libraries actually installed, and the constraints every solver must respect.
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache

import jinja2

from pdesharp.evaluate.sandbox import available_libraries as _sandbox_libraries
from pdesharp import facts as task_facts
from pdesharp.facts import TaskFacts
from pdesharp.records import STEP_NUMBERS, Analysis
from pdesharp.task import Task

# Libraries a solver may reasonably use; only the installed ones are offered to the model.

CONSTRAINTS = [
    "Keep the function name and the parameter names and order of the template unchanged.",
    "Accept any grid size N and any batch size; nothing may be hard-coded to the data's grid.",
    "Return every requested output frame, including the initial one at t = 0.",
    "No plotting, no file I/O, no network access, no printing of large arrays.",
    "Use only the Python standard library and the installed libraries listed above.",
]
TIME_ONLY = {2}  # constraints that speak of time frames: not stated for a steady task
# Installed in the sandbox but of no use to a solver that may neither plot nor touch files:
# not offered, so the libraries line does not contradict the constraints.
NOT_OFFERED = {"h5py", "matplotlib"}


def constraints(task: Task) -> list[str]:
    """The rules every solver must respect, as the task's kind makes them true."""
    return [c for i, c in enumerate(CONSTRAINTS) if not (task.steady and i in TIME_ONLY)]


JUSTIFICATION_CHARS = 1200  # a justification shown in a pool listing is cut here


def shorten(text: str, limit: int = JUSTIFICATION_CHARS) -> str:
    """``text`` on one line, cut at a word boundary with an ellipsis if over ``limit``."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:  # a word boundary, unless the text has no spaces to speak of
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("pdesharp", "prompts"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )
    env.filters["shorten"] = shorten
    return env


def render(name: str, **context) -> str:
    """Render ``prompts/<name>.j2`` with ``context`` (missing variables raise)."""
    return _env().get_template(f"{name}.j2").render(**context).strip() + "\n"


@lru_cache(maxsize=1)
def available_libraries() -> tuple[str, ...]:
    """Installed numerical libraries a solver can import in the sandbox (the evaluator's list)."""
    return tuple(_sandbox_libraries())


def allowed_modules() -> set[str]:
    """Top-level modules a solver may import: the standard library and the installed set."""
    return set(sys.stdlib_module_names) | set(available_libraries())


def objective(feedback: str = "nrmse", facts: TaskFacts | None = None, steady: bool = False
              ) -> str:
    """What the score of a solver is, in words (every prompt that asks for a solver or a
    judgement states it, so no model optimises for something else). The precise definition
    belongs to the ``full`` facts level; ``codepde`` names the metric only, as CodePDE does."""
    full = facts is None or facts.full
    return render("_objective", feedback=feedback, full=full, steady=steady,
                  reference_error=facts.reference_error if facts is not None else None,
                  reference_stated=facts is not None and facts.reference_stated).strip()


def hardware(facts: TaskFacts | None) -> str:
    """Where the solver runs, as the libraries line of every code prompt says it."""
    if facts is not None and facts.gpu:  # `--device cuda`: the sandbox exposes the GPU
        return ("a CUDA GPU is available to the solver (libraries with GPU support may use it; "
                "the inputs arrive, and the outputs must be returned, as NumPy arrays)")
    return "CPU only, no GPU"


def facts_block(task: Task, facts: TaskFacts | None = None, feedback: str = "nrmse") -> str:
    """The task facts every code prompt carries after the description (``_facts.j2``); the
    baselines' prompts include exactly this text."""
    return render("_facts", **_facts_context(task, facts, feedback)).strip()


def _facts_context(task: Task, facts: TaskFacts | None, feedback: str) -> dict:
    facts = facts or TaskFacts.from_spec(task)
    return {**task_facts.context(task, facts), "task": task,
            "signature": task.solver.signature,
            "objective": objective(feedback, facts, steady=task.steady)}


def task_context(task: Task, feedback: str = "nrmse", facts: TaskFacts | None = None) -> dict:
    """The variables ``_task.j2`` needs: the description, the facts block at the facts level
    (:mod:`pdesharp.facts`), the solver template, the installed libraries and the constraints.
    The task's own statements (initial conditions, reference, notes) are passed verbatim."""
    said = task_facts.statement(task, facts)
    return {
        **_facts_context(task, facts, feedback),
        "title": said["title"], "description": said["description"],
        "template": said["template"].rstrip(),
        "libraries": offered_libraries(),
        "hardware": hardware(facts),
        "constraints": constraints(task),
    }


def offered_libraries() -> list[str]:
    """The installed libraries the prompts offer a solver (:data:`NOT_OFFERED` left out)."""
    return [lib for lib in available_libraries() if lib not in NOT_OFFERED]


TITLE_CHARS = 100  # a design title: one line, cut at a word boundary


def clean_title(text: str) -> str:
    """A design title on one line: markdown and a "Title:" label removed, at most
    ``TITLE_CHARS`` characters, cut at a word boundary."""
    text = strip_label(" ".join(str(text).split()).strip("*_`# "), "title").strip("*_` ")
    return shorten(text, TITLE_CHARS)


def strip_label(text: str, label: str) -> str:
    """``text`` without a leading "<label>:" or "<label>." (as models write "Justification: ..."
    or "**Justification.** ..."), so a prompt that prints its own label does not print it
    twice."""
    # "Justification:", "**Justification:**", "**Justification.**", "## Justification:"
    pattern = re.compile(rf"[\s*_#>]*{label}[\s*_]*[:.][\s*_]*", re.IGNORECASE)
    text, at = str(text), 0
    while m := pattern.match(text, at):  # "**Justification:** Justification: ..." happens
        at = m.end()
    return text[at:].strip()


ROUTE_WORDS = {"analytical": "analytical solution", "transformation": "transformation",
               "hybrid": "hybrid (part exact, part numerical)", "numerical": "numerical scheme"}


def analysis_context(analysis: Analysis | None, facts: TaskFacts | None = None) -> dict:
    """The analysis as later prompts show it (``_analysis.j2``): its structured facts, per
    step the decision and the model's own one-line summary, never the raw prose (which
    carries the model's asides to the analyst's questions). A bound's value (the formula at the
    data's grid and input scales) is shown only where ``facts`` allow numbers read off the data
    (:attr:`TaskFacts.numbers`)."""
    if analysis is None:
        return {"analysis": None}
    c = analysis.classification
    steps = []
    for st in analysis.steps:
        f = st.facts or {}
        steps.append({"name": st.name, "number": STEP_NUMBERS.get(st.name, "?"),
                      "applies": st.applies, "skipped": st.skipped,
                      "summary": shorten(str(f.get("summary") or f.get("notes") or ""), 600),
                      "method": shorten(str(f.get("method") or ""), 600)})
    return {"analysis": {
        "route": analysis.route, "route_words": ROUTE_WORDS.get(analysis.route, analysis.route),
        "classification": (f"{c.pde_type}, {'linear' if c.linear else 'nonlinear'}, "
                           + (f"order {c.time_order} in time and {c.space_order} in space"
                              if c.time_order is not None else
                              f"steady, order {c.space_order} in space")
                           + f"; boundary: {c.boundary}"),
        "numbers": facts is not None and facts.numbers,
        "notes": shorten(c.notes, 600), "steps": steps, "stability": analysis.stability,
        "schemes": analysis.recommended_schemes, "key_facts": analysis.key_facts}}


# What may follow the three backticks that open a fence, up to its language tag (group 1).
ANY_LANGUAGE = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")


def fenced_blocks(text: str, opening: re.Pattern = ANY_LANGUAGE) -> list[tuple[str, str]]:
    """(language, body) of every fenced block in ``text``: what the regular expression
    `````<opening>[^\n]*\n(.*?)```` (DOTALL) finds, found in one pass. The expression itself
    backtracks: a reply of many unclosed fences takes it quadratic time (minutes for 1 MB).
    ``opening`` is matched right after the backticks; its group 1 is the language."""
    out: list[tuple[str, str]] = []
    i = 0
    while True:
        start = text.find("```", i)
        if start < 0:
            return out
        m = opening.match(text, start + 3)
        if m is None:
            i = start + 1
            continue
        newline = text.find("\n", m.end())
        close = text.find("```", newline + 1) if newline >= 0 else -1
        if close < 0:  # this fence never closes, so no later one can (its opening would close it)
            return out
        out.append((m.group(1), text[newline + 1:close]))
        i = close + 3


def extract_code(text: str) -> str | None:
    """The longest ```python fenced block (CodePDE's rule); failing that, the longest untagged
    block that defines a function (some models omit the language tag); else None."""
    fences = fenced_blocks(text)
    blocks = [body for lang, body in fences if lang.lower() in ("python", "py", "python3")]
    if not blocks:
        blocks = [body for lang, body in fences if not lang and "def " in body]
    if not blocks:
        return None
    return max(blocks, key=len).strip("\n") + "\n"


def extract_json(text: str) -> dict | None:
    """The last JSON object in ``text``: a ```json block if any, else the last top-level
    ``{...}`` that decodes. Tolerates trailing commas and Python literals (True/False/None).
    Linear in the length of ``text``; nesting deeper than :data:`MAX_JSON_DEPTH` is not read."""
    fenced = [(lang.lower(), body) for lang, body in fenced_blocks(text)
              if lang.lower() in ("json", "")]
    # a fenced block wins over a brace pair in prose or code; the last of each kind wins
    for lang, body in reversed(fenced):
        obj = _loads_tolerant(body.strip()) if body.lstrip().startswith("{") else None
        if obj is None and lang == "json":  # a json block with a stray remark around it
            found = [o for o in _json_objects(body) if isinstance(o, dict)]
            obj = found[-1] if found else None
        if isinstance(obj, dict):
            return obj
    found = [o for o in _json_objects(text) if isinstance(o, dict)]
    return found[-1] if found else None


MAX_JSON_DEPTH = 20  # nesting of objects and arrays read in a reply (the prompts ask for <= 3)
MAX_JSON_TRIES = 1000  # objects decoded per reply at most: the last ones (the facts come last)
_JSON_TOKEN = re.compile(r'[{}\[\]"\\\n]')
_OBJECT_START = re.compile(r'\{\s*["}]')  # what a JSON object starts with
_TOLERABLE = re.compile(r",\s*[}\]]|\b(?:True|False|None)\b")  # what _loads_tolerant mends


def _json_objects(text: str) -> list:
    """Every top-level JSON object in ``text``: each balanced ``{...}`` (brackets inside
    strings skipped), in order, decoded strictly or else tolerantly; one that decodes hides the
    objects inside it, one that does not lets them be tried. One pass finds the spans, and a
    character is decoded at most MAX_JSON_DEPTH + 1 times, so the time is linear in the reply
    (decoding from every ``{`` took minutes on ``'{' * 12000``)."""
    spans = [(a, b) for a, b in _object_spans(text) if _OBJECT_START.match(text, a)]
    out, taken = [], 0
    for start, end in spans[-MAX_JSON_TRIES:]:
        if start < taken:
            continue
        obj = _loads_tolerant(text[start:end])
        if isinstance(obj, dict):
            out.append(obj)
            taken = end
    return out


def _object_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every balanced ``{...}`` nested at most MAX_JSON_DEPTH deep inside
    (objects and arrays), by start. A string runs to its closing quote or the end of its line
    (JSON strings hold no raw newline), so a stray quote in prose spoils one line at most."""
    spans: list[tuple[int, int]] = []
    if "}" not in text:  # no object can close: nothing to scan
        return spans
    starts: list[int] = []  # the open brackets: start (negative for '['), deepest level inside
    deepest: list[int] = []
    in_string, skip = False, 0
    for m in _JSON_TOKEN.finditer(text):
        k = m.start()
        if k < skip:
            continue
        c = m.group()
        if in_string:
            if c == "\\":
                skip = k + 2
            elif c == '"' or c == "\n":
                in_string = False
        elif c == "{" or c == "[":
            starts.append(k if c == "{" else -1 - k)
            deepest.append(len(starts))
        elif c == '"':
            in_string = bool(starts)
        elif c == "]":
            if starts and starts[-1] < 0:
                _close(starts, deepest)
        elif c == "}":
            while starts and starts[-1] < 0:  # an array left open inside: not JSON
                _close(starts, deepest)
            if starts:
                start, inside = _close(starts, deepest)
                if inside - len(starts) <= MAX_JSON_DEPTH:
                    spans.append((start, k + 1))
    spans.sort()
    return spans


def _close(starts: list[int], deepest: list[int]) -> tuple[int, int]:
    start, inside = starts.pop(), deepest.pop()
    if deepest and inside > deepest[-1]:
        deepest[-1] = inside
    return start, inside


def _loads_tolerant(raw: str):
    try:  # ValueError: not JSON, or an integer past Python's 4300-digit limit
        return json.loads(raw)
    except (ValueError, RecursionError):
        pass
    if not _TOLERABLE.search(raw):
        return None
    fixed = re.sub(r",\s*([}\]])", r"\1", raw)
    fixed = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", re.sub(r"\bNone\b", "null", fixed)))
    try:
        return json.loads(fixed)
    except (ValueError, RecursionError):
        return None


async def ask(model, messages: list, tag: str, *, sample_index: int = 0,
              temperature: float | None = 0.7, max_tokens: int | None = 8192) -> str:
    """One chat call with the pipeline's conventions (the tag names the calling role).

    Temperature 0.7 is CodePDE's setting for non-reasoning models; transports drop it for
    models that reject it."""
    from pdesharp.llm.base import ChatParams

    params = ChatParams(tag=tag, sample_index=sample_index, max_tokens=max_tokens,
                        temperature=temperature)
    reply = await model.chat(list(messages), params)
    return reply.text
