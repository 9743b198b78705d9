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
from contextvars import ContextVar
from functools import lru_cache

import jinja2

from pdesharp.evaluate.sandbox import available_libraries as _sandbox_libraries
from pdesharp.task import Task

# Libraries a solver may reasonably use; only the installed ones are offered to the model.

CONSTRAINTS = [
    "Keep the function name and the parameter names and order of the template unchanged.",
    "Accept any grid size N and any batch size; nothing may be hard-coded to the data's grid.",
    "Return every requested output frame, including the initial one at t = 0.",
    "No plotting, no file I/O, no network access, no printing of large arrays.",
    "Use only the Python standard library and the installed libraries listed above.",
]


# The device solvers run on ("cpu" or "cuda"), set by `pdesharp solve --device` for the run:
# with "cuda", the task section tells the model that a GPU is available in the sandbox.
SOLVER_DEVICE: ContextVar[str] = ContextVar("solver_device", default="cpu")

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


def objective(feedback: str = "nrmse") -> str:
    """What the score of a solver is, in words (every prompt that asks for a solver or a
    judgement states it, so no model optimises for something else)."""
    return render("_objective", feedback=feedback).strip()


def task_context(task: Task, feedback: str = "nrmse") -> dict:
    """The variables ``_task.j2`` needs. The task's own statements about its data (how the
    initial conditions were drawn, its notes) are passed through verbatim, never paraphrased."""
    return {
        "task": task,
        "template": task.solver.template.rstrip(),
        "signature": task.solver.signature,
        "libraries": list(available_libraries()),
        "constraints": CONSTRAINTS,
        "initial_condition": task.initial_condition.strip(),
        "task_notes": [n.strip() for n in task.notes if n.strip()],
        "objective": objective(feedback),
        "device": SOLVER_DEVICE.get(),
    }


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str | None:
    """The longest ```python fenced block (CodePDE's rule); failing that, the longest untagged
    block that defines a function (some models omit the language tag); else None."""
    fences = _FENCE.findall(text)
    blocks = [body for lang, body in fences if lang.lower() in ("python", "py", "python3")]
    if not blocks:
        blocks = [body for lang, body in fences if not lang and "def " in body]
    if not blocks:
        return None
    return max(blocks, key=len).strip("\n") + "\n"


def without_json(text: str) -> str:
    """``text`` without its fenced ```json blocks (the prose of an analysis step)."""
    return re.sub(r"```json[^\n]*\n.*?```", "", text, flags=re.DOTALL).strip()


def extract_json(text: str) -> dict | None:
    """The last JSON object in ``text``: a ```json block if any, else the last balanced
    ``{...}``. Tolerates trailing commas and Python literals (True/False/None)."""
    fenced = [body for lang, body in _FENCE.findall(text) if lang.lower() in ("json", "")]
    # a fenced block wins over a brace pair in prose or code; the last of each kind wins
    for raw in [*reversed(fenced), *reversed(_balanced_objects(text))]:
        obj = _loads_tolerant(raw.strip())
        if isinstance(obj, dict):
            return obj
    return None


def _balanced_objects(text: str) -> list[str]:
    out, depth, start, in_str, esc = [], 0, None, False, False
    for i, ch in enumerate(text):
        if in_str:
            esc = (ch == "\\") and not esc
            if ch == '"' and not esc:
                in_str = False
            continue
        if ch == '"':
            in_str, esc = True, False
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0 and start is not None:
                out.append(text[start:i + 1])
    return out


def _loads_tolerant(raw: str):
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    fixed = re.sub(r",\s*([}\]])", r"\1", raw)
    fixed = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", re.sub(r"\bNone\b", "null", fixed)))
    try:
        return json.loads(fixed)
    except json.JSONDecodeError:
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
