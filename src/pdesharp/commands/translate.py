"""``pdesharp translate "description" [--out spec.yaml] --model M``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pdesharp.commands._common import fail
from pdesharp.llm.base import ModelError
from pdesharp.llm.cli_args import add_llm_arguments, llm_options
from pdesharp.untrusted import one_line, terminal


NO_MODEL = (
    "translate needs a language model: pass --model provider:model (`pdesharp models` lists "
    "providers; the built-in analyst cannot read prose).\n"
    "Without a model, write the task YAML by hand: `pdesharp tasks new my_task.yaml` writes a "
    "commented minimal file to fill in (the format is in docs/tasks.md; examples/tasks/ has "
    "worked examples), `pdesharp tasks check my_task.yaml` checks it, and `pdesharp solve "
    "my_task.yaml` solves it.")


def register(sub) -> None:
    p = sub.add_parser("translate", help="turn a PDE description into a task spec (YAML)")
    p.add_argument("description", help="the description, or a path to a text file holding it")
    p.add_argument("--model", required=False, default=None,
                   help="provider:model (translation needs a language model)")
    p.add_argument("--base-url", default=None)
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--out", default=None, help="write the spec here (default: print it)")
    add_llm_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from pdesharp.pipeline import SolveConfig
    from pdesharp.llm.presets import is_builtin
    from pdesharp.rolesets import make_chat_model
    from pdesharp.translator import TranslateError, translate

    if not args.model or is_builtin(args.model):
        fail(NO_MODEL)
    text = args.description
    if len(text) < 4096 and Path(text).is_file():
        text = Path(text).read_text()
    opts = llm_options(args)
    config = SolveConfig(model=args.model, base_url=args.base_url, no_cache=args.no_cache,
                         llm={k: v for k, v in opts.items()})
    try:
        model = make_chat_model(args.model, config)
        result = asyncio.run(translate(model, text))
    except (ModelError, TranslateError, ValueError) as exc:
        fail(str(exc))
    if result.questions:
        print("The description leaves these questions open; add the answers and try again:")
        for q in result.questions:
            print(f"  - {one_line(q, 1000)}")  # a model's words
        return 3
    if args.out:
        Path(args.out).write_text(result.yaml_text)
        print(f"wrote {args.out} (task {result.task.name!r}); solve it with "
              f"`pdesharp solve {args.out} --model {args.model}`")
    else:
        print(terminal(result.yaml_text), end="")
    return 0
