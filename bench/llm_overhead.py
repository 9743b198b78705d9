"""Overhead of the model layer itself, measured in one run (no real model involved).

Prints per-call wall time for: a ScriptedModel call; the OpenAI SDK transport to the loopback
test server (HTTP + JSON + SDK client setup per call); the same through make_model's wrappers;
a response-cache miss (write) and hit; and the ratios. Real model calls take seconds, so
anything in the millisecond range here is negligible; the point is to notice regressions.

    python bench/llm_overhead.py [--calls 50]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from llm_server import LLMServer  # noqa: E402

from pdesharp.llm import CachedModel, ChatParams, Message, OpenAICompatModel, make_model  # noqa: E402
from pdesharp.llm.scripted import ScriptedModel  # noqa: E402

PROMPT = [Message(role="system", content="You are a numerical analyst."),
          Message(role="user", content="x" * 4000)]


async def per_call(model, n: int, distinct: bool = True) -> float:
    start = time.perf_counter()
    for i in range(n):
        await model.chat(PROMPT, ChatParams(sample_index=i if distinct else 0))
    return (time.perf_counter() - start) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=50)
    n = ap.parse_args().calls
    reply = "y" * 4000
    with LLMServer(lambda body, i: reply) as srv, tempfile.TemporaryDirectory() as tmp:
        scripted = asyncio.run(per_call(ScriptedModel(lambda m, p, i: reply), n))
        transport = OpenAICompatModel("test-model", base_url=srv.url, api_key="k", free=True)
        first = asyncio.run(per_call(transport, 1))  # lazy SDK imports, shared TLS context
        http = asyncio.run(per_call(transport, n))
        wrapped = asyncio.run(per_call(make_model("vllm:test-model", base_url=srv.url), n))
        cached = CachedModel(ScriptedModel(lambda m, p, i: reply), Path(tmp) / "c.sqlite")
        miss = asyncio.run(per_call(cached, n))
        hit = asyncio.run(per_call(cached, n))
    ms = 1e3
    print(f"calls per measurement: {n}")
    print(f"scripted model          {scripted * ms:8.3f} ms/call")
    print(f"first SDK call          {first * ms:8.3f} ms     (one-time imports and TLS context)")
    print(f"SDK over loopback HTTP  {http * ms:8.3f} ms/call")
    print(f"  + make_model wrappers {wrapped * ms:8.3f} ms/call  (ratio to bare transport {wrapped / http:.2f})")
    print(f"cache miss (write)      {miss * ms:8.3f} ms/call")
    print(f"cache hit               {hit * ms:8.3f} ms/call  (hit / SDK round trip {hit / http:.3f})")


if __name__ == "__main__":
    main()
