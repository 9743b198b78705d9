"""Re-implementations of three OptiLLM inference techniques (CoT-reflection, MoA, CePO).

These are **our re-implementations** of the structure that OptiLLM (codelion/optillm 0.3.x,
see docs/baselines.md) documents for each approach; they are not the OptiLLM package. Each is a
chat model wrapped around another chat model: one ``chat`` call of the baseline becomes the
technique's internal calls, each made (and recorded in the run store) on the inner model. The
returned :class:`Reply` carries the summed usage, cost and latency, as OptiLLM's proxy reports
summed completion tokens.

Like OptiLLM's proxy, the conversation is first flattened into a system prompt plus one query
string (``"User: ..."`` / ``"Assistant: ..."`` lines), so multi-turn debugging conversations
reach the technique as a single user message.

To run the real OptiLLM instead, start its proxy yourself and pass ``--optillm-url`` (see
:mod:`pdesharp.baselines.optillm_proxy`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pdesharp.baselines.common import render
from pdesharp.llm.base import ChatModel, ChatParams, Message, ModelError, Reply, Usage

_OUTPUT = re.compile(r"<output>(.*?)(?:</output>|$)", re.DOTALL)
_RATING = re.compile(r"Rating:\s*\[\[\s*([0-9]+(?:\.[0-9]+)?)\s*\]\]")

MOA_FALLBACK_CRITIQUE = "All candidates show reasonable approaches to the problem."


def flatten(messages: list[Message]) -> tuple[str, str]:
    """OptiLLM's view of a conversation: (system prompt, one query string)."""
    system, lines = "", []
    for m in messages:
        if m.role == "system":
            system = m.content
        elif m.role == "user":
            lines.append(f"User: {m.content}")
        elif m.content:
            lines.append(f"Assistant: {m.content}")
    return system, "\n".join(lines)


@dataclass
class _Tally:
    """Sums the accounting of the internal calls into the one reply the caller sees."""

    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    latency: float = 0.0
    calls: int = 0

    def add(self, reply: Reply) -> Reply:
        self.usage = self.usage + reply.usage
        self.cost += reply.cost_usd
        self.latency += reply.latency_s
        self.calls += 1
        return reply

    def reply(self, text: str, model: str, finish_reason: str | None = "stop") -> Reply:
        return Reply(text=text, model=model, usage=self.usage, cost_usd=self.cost,
                     latency_s=self.latency, finish_reason=finish_reason)


def _truncated(reply: Reply) -> bool:
    return reply.finish_reason == "length" or not (reply.text or "").strip()


class _Technique:
    approach = ""  # OptiLLM's approach slug

    def __init__(self, inner: ChatModel):
        self.inner = inner
        self.name = f"{self.approach}-reimpl/{inner.name}"

    async def _call(self, tally: _Tally, messages: list[Message], *, tag: str, index: int,
                    temperature: float | None, max_tokens: int | None) -> Reply:
        params = ChatParams(temperature=temperature, max_tokens=max_tokens, sample_index=index,
                            tag=tag)
        return tally.add(await self.inner.chat(messages, params))


class CoTReflection(_Technique):
    """One call; the model thinks in <thinking>/<reflection> and answers in <output>; only the
    <output> text is returned (the whole reply if the tag is missing). Defaults temperature 0.6
    and max_tokens 4096, overridden by the request's values as OptiLLM does."""

    approach = "cot_reflection"

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        params = params or ChatParams(temperature=None, max_tokens=None)
        system, query = flatten(messages)
        tally = _Tally()
        reply = await self._call(
            tally, [Message(role="system", content=render("cot_reflection", system_prompt=system)),
                    Message(role="user", content=query)],
            tag=f"{params.tag}.cot_reflection", index=params.sample_index,
            temperature=0.6 if params.temperature is None else params.temperature,
            max_tokens=params.max_tokens or 4096)
        match = _OUTPUT.search(reply.text or "")
        text = match.group(1).strip() if match else reply.text
        return tally.reply(text, reply.model, reply.finish_reason)


class MixtureOfAgents(_Technique):
    """Three candidates (temperature 1; three separate calls, OptiLLM's path for endpoints
    without ``n``), a critique of all three (temperature 0.1, max_tokens 512, generic fallback
    text when truncated or empty) and a final answer (temperature 0.1; candidate 1 if the final
    reply is truncated or empty). Truncated candidates are dropped, the list padded with the
    first. 5 calls per request."""

    approach = "moa"

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        params = params or ChatParams(temperature=None, max_tokens=None)
        system, query = flatten(messages)
        max_tokens = params.max_tokens or 4096
        tally = _Tally()
        base = [Message(role="system", content=system), Message(role="user", content=query)]
        candidates, last_error = [], None
        for k in range(3):
            try:
                r = await self._call(tally, base, tag=f"{params.tag}.moa.candidate",
                                     index=params.sample_index * 3 + k, temperature=1.0,
                                     max_tokens=max_tokens)
            except ModelError as exc:  # OptiLLM skips a failing candidate call
                last_error = exc
                continue
            if not _truncated(r):
                candidates.append(r.text)
        if not candidates:
            raise ModelError(f"moa (re-implementation): no usable candidate out of 3 calls"
                             f"{f'; last error: {last_error}' if last_error else ' (all truncated)'}")
        candidates += [candidates[0]] * (3 - len(candidates))
        critique_reply = await self._call(
            tally, [Message(role="system", content=system),
                    Message(role="user", content=render("moa_critique", query=query,
                                                        candidates=candidates))],
            tag=f"{params.tag}.moa.critique", index=params.sample_index, temperature=0.1,
            max_tokens=512)
        critique = MOA_FALLBACK_CRITIQUE if _truncated(critique_reply) else critique_reply.text
        final = await self._call(
            tally, [Message(role="system", content=system),
                    Message(role="user", content=render("moa_final", query=query,
                                                        candidates=candidates, critique=critique))],
            tag=f"{params.tag}.moa.final", index=params.sample_index, temperature=0.1,
            max_tokens=max_tokens)
        text = candidates[0] if _truncated(final) else final.text
        return tally.reply(text, final.model)


@dataclass
class CepoConfig:
    """OptiLLM's CePO defaults (``cepo_config.yaml``), absolute best-of-n rating."""

    bestofn_n: int = 3
    bestofn_temperature: float = 0.1
    bestofn_max_tokens: int = 4096
    planning_n: int = 3  # accepted plans per completion
    planning_m: int = 6  # plan attempts per completion at most
    temperature_plan: float = 0.55
    temperature_execute: float = 0.25
    temperature_review: float = 0.1
    temperature_answer: float = 0.0
    max_tokens: int = 4096  # every step


class CePO(_Technique):
    """Cerebras Planning and Optimization, in the sequential (March-2025) form: for each of 3
    completions, plans and their executions until 3 are accepted (at most 6 attempts; a plan or
    execution cut off by the length limit is rejected), a review of the proposals, and an
    answer; then one absolute rating call per completion ("Rating: [[r]]"), best rating wins
    (the first on ties). 27 calls per request when nothing is rejected."""

    approach = "cepo"

    def __init__(self, inner: ChatModel, config: CepoConfig | None = None):
        super().__init__(inner)
        self.config = config or CepoConfig()

    async def _completion(self, tally, system, query, tag, index) -> str:
        c = self.config
        sys_msg = [Message(role="system", content=system)] if system else []
        proposals: list[str] = []
        attempts = 0
        while len(proposals) < c.planning_n and attempts < c.planning_m:
            attempts += 1
            plan_msgs = sys_msg + [Message(role="user", content=render("cepo_plan", query=query))]
            plan = await self._call(tally, plan_msgs, tag=f"{tag}.cepo.plan", index=index,
                                    temperature=c.temperature_plan, max_tokens=c.max_tokens)
            if _truncated(plan):
                continue
            exec_msgs = plan_msgs + [Message(role="assistant", content=plan.text),
                                     Message(role="user", content=render("cepo_execute"))]
            done = await self._call(tally, exec_msgs, tag=f"{tag}.cepo.execute", index=index,
                                    temperature=c.temperature_execute, max_tokens=c.max_tokens)
            if _truncated(done):
                continue
            proposals.append(done.text)
        if not proposals:  # no plan survived: answer the question directly
            direct = await self._call(tally, sys_msg + [Message(role="user", content=query)],
                                      tag=f"{tag}.cepo.direct", index=index,
                                      temperature=c.temperature_plan, max_tokens=c.max_tokens)
            return direct.text
        review_msgs = sys_msg + [Message(role="user", content=render(
            "cepo_review", query=query, proposals=proposals))]
        review = await self._call(tally, review_msgs, tag=f"{tag}.cepo.review", index=index,
                                  temperature=c.temperature_review, max_tokens=c.max_tokens)
        answer_msgs = review_msgs + [Message(role="assistant", content=review.text),
                                     Message(role="user", content=render("cepo_answer", query=query))]
        answer = await self._call(tally, answer_msgs, tag=f"{tag}.cepo.answer", index=index,
                                  temperature=c.temperature_answer, max_tokens=c.max_tokens)
        return answer.text

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        params = params or ChatParams(temperature=None, max_tokens=None)
        c = self.config
        system, query = flatten(messages)
        tally = _Tally()
        completions = []
        for k in range(c.bestofn_n):
            completions.append(await self._completion(
                tally, system, query, params.tag, params.sample_index * c.bestofn_n + k))
        ratings = []
        for k, text in enumerate(completions):
            r = await self._call(
                tally, [Message(role="user", content=render("cepo_rating", query=query,
                                                            response=text))],
                tag=f"{params.tag}.cepo.rating", index=params.sample_index * c.bestofn_n + k,
                temperature=c.bestofn_temperature, max_tokens=c.bestofn_max_tokens)
            ratings.append(parse_rating(r.text))
        best = max(range(len(completions)), key=lambda i: (ratings[i], -i))
        return tally.reply(completions[best], self.inner.name)


def parse_rating(text: str) -> float:
    """The number in ``Rating: [[r]]`` (the last one if several), -1 if there is none."""
    found = _RATING.findall(text or "")
    return float(found[-1]) if found else -1.0


TECHNIQUES = {"cot": CoTReflection, "moa": MixtureOfAgents, "cepo": CePO}
