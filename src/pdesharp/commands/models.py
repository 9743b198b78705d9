"""``pdesharp models``: providers, prices, and checking an endpoint before a long run.

    pdesharp models                          providers, their URLs and whether the key is set
    pdesharp models prices [--prices FILE]   the price table in use
    pdesharp models check SPEC [--chat]      can we reach it, is the model offered, (one call)
"""

from __future__ import annotations

import asyncio
import os

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pdesharp.commands._common import fail
from pdesharp.llm.base import ChatParams, Message, ModelError
from pdesharp.llm.presets import PRESETS, parse_spec
from pdesharp.llm.prices import PriceError, load_prices

# A tiny fixed prompt: checking an endpoint should cost a fraction of a cent.
CHECK_PROMPT = "Reply with the single word: ready"


def register(sub) -> None:
    p = sub.add_parser("models", help="list model providers and prices, or check an endpoint")
    p.add_argument("action", nargs="?", choices=["list", "prices", "check"], default="list")
    p.add_argument("spec", nargs="?", help="provider:model (with 'check')")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint URL")
    p.add_argument("--api-key-env", default=None, metavar="NAME",
                   help="environment variable holding the API key")
    p.add_argument("--prices", default=None, metavar="FILE", help="price YAML overriding the shipped one")
    p.add_argument("--chat", action="store_true",
                   help="with 'check': also send one tiny chat request (costs a few tokens)")
    p.add_argument("--llm-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="timeout for the check (default 30)")
    p.set_defaults(func=run)


def run(args) -> int:
    # soft_wrap: URLs and error messages stay on one line (copyable, greppable).
    console = Console(soft_wrap=True)
    if args.action == "prices":
        return _prices(console, args)
    if args.action == "check":
        if not args.spec:
            fail("usage: pdesharp models check PROVIDER:MODEL [--base-url URL] [--chat]")
        return _check(console, args)
    table = Table(title="model providers (use as provider:model)")
    for col in ("provider", "base URL", "API key variable", "key set"):
        table.add_column(col, overflow="fold")
    for p in PRESETS.values():
        key = p.api_key_env or "-"
        is_set = "-" if not p.api_key_env else ("yes" if os.environ.get(p.api_key_env) else "no")
        table.add_row(p.provider, p.resolved_base_url() or "(--base-url)", key, is_set)
    console.print(table)
    console.print("'builtin' selects the built-in numerical analyst (no model). See docs/models.md.")
    return 0


def _prices(console: Console, args) -> int:
    try:
        table = load_prices(args.prices)
    except PriceError as exc:
        fail(str(exc))
    out = Table(title="USD per million tokens (approximate; sources: " + ", ".join(table.sources) + ")")
    for col in ("model", "input", "cached input", "cache write", "output"):
        out.add_column(col, justify="left" if col == "model" else "right")
    for name in sorted(table.prices):
        p = table.prices[name]
        cached = "-" if p.cached_input is None else f"{p.cached_input:g}"
        write = "-" if p.cache_write is None else f"{p.cache_write:g}"
        out.add_row(name, f"{p.input:g}", cached, write, f"{p.output:g}")
    console.print(out)
    return 0


def _check(console: Console, args) -> int:
    from pdesharp.llm.factory import make_model
    from pdesharp.llm.openai_compat import OpenAICompatModel

    try:
        spec = parse_spec(args.spec, base_url=args.base_url, api_key_env=args.api_key_env)
        if args.prices:
            from pdesharp.llm.prices import set_default_prices
            set_default_prices(load_prices(args.prices))
        model = make_model(args.spec, base_url=args.base_url, api_key_env=args.api_key_env,
                           timeout=args.llm_timeout, max_retries=0)
    except (ValueError, ModelError, ImportError) as exc:
        fail(str(exc))
    console.print(escape(f"{spec.name} at {spec.base_url}"))
    transport = model
    while not isinstance(transport, OpenAICompatModel) and hasattr(transport, "inner"):
        transport = transport.inner
    status = 0
    if isinstance(transport, OpenAICompatModel):
        try:
            offered = asyncio.run(transport.list_models())
        except ModelError as exc:
            console.print(f"[red]GET /models failed:[/red] {escape(str(exc))}")
            return 1
        if spec.model in offered:
            console.print(f"[green]ok[/green]: the endpoint offers {escape(repr(spec.model))}")
        else:
            shown = ", ".join(offered[:15]) + (" ..." if len(offered) > 15 else "")
            console.print("[yellow]warning[/yellow]: " + escape(
                f"{spec.model!r} is not in the endpoint's model list ({len(offered)} models: {shown})"))
            status = 1
    if args.chat:
        try:
            reply = asyncio.run(model.chat([Message(role="user", content=CHECK_PROMPT)],
                                           ChatParams(temperature=None, max_tokens=None, tag="check")))
        except ModelError as exc:
            console.print(f"[red]chat failed:[/red] {escape(str(exc))}")
            return 1
        u = reply.usage
        console.print("[green]chat ok[/green]: " + escape(
            f"{reply.text.strip()[:80]!r} from {reply.model}; {u.prompt_tokens} prompt + "
            f"{u.completion_tokens} completion tokens, ${reply.cost_usd:.6f}, {reply.latency_s:.2f} s"))
    return status
