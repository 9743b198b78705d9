"""Choosing the roles of a run from its config: LLM roles on chat models, or the built-in analyst.

``--model builtin`` (or no model) selects :mod:`pdesharp.builtin`, which fills the same
Protocols with symbolic analysis and a scheme catalogue. Any other spec builds a chat model
with :func:`pdesharp.llm.make_model`, wrapped in :class:`~pdesharp.recording.RecordingModel` so
every call is journalled in the run store, replayed on resume and held to the budgets.

Testing aid: ``--model scripted:PATH`` answers from a YAML rules file (:class:`RulesModel`).
The replies in such files are written by us to exercise the pipeline; they are not recordings
of any real model. The format::

    delay_s: 0.0            # optional: wait this long per call (to test killing a run)
    call_log: /tmp/calls    # optional: append one JSON line per call that reaches this model
                            # (pid, tag, sample, request hash): counts calls across processes
    rules:                  # the first rule that matches a call answers it
      - tag: judge.nominate # matches this tag and its sub-tags ("judge" matches all judge.*)
        when: ["Round 1 "]  # optional: all substrings must occur in the last message
        context: ["judge-2"] # optional: all substrings must occur somewhere in the messages
        sample: 3           # optional: only for this ChatParams.sample_index
        delay_s: 0.1        # optional: this reply takes longer (to shuffle concurrent calls)
        until_file: /tmp/go # optional: ... but no longer than until this file exists
        reply: |
          ...
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from pdesharp.analysis import LLMAnalyst
from pdesharp.facts import TaskFacts, build_facts
from pdesharp.genesis import LLMAuthor
from pdesharp.llm.base import ChatParams, Message, Reply
from pdesharp.llm.presets import is_builtin  # noqa: F401  (the one definition, re-exported)
from pdesharp.llm.scripted import ScriptedModel
from pdesharp.config import SolveConfig
from pdesharp.recording import RecordingModel
from pdesharp.roles import JUDGE_NAMES, Roles
from pdesharp.store import RunStore
from pdesharp.synthesis.judges import LLMJudge
from pdesharp.synthesis.ranking import Rule
from pdesharp.task import Task, TaskError, load_task, load_task_file



class RulesModel:
    """A stateless scripted ChatModel: the reply depends only on the request, so a resumed
    run sees the same replies as the killed one."""

    def __init__(self, rules: list[dict], name: str = "scripted:rules", delay_s: float = 0.0,
                 price=None, call_log: str | None = None):
        self.rules = rules
        self.name = name
        self.delay_s = delay_s
        self.call_log = call_log
        self._scripted = ScriptedModel(self._answer, name=name, price=price)
        self._last_rule: dict = {}

    @classmethod
    def from_file(cls, path: str | Path) -> "RulesModel":
        path = Path(path)
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
            raise ValueError(f"{path}: a scripted model file needs a top-level 'rules' list")
        log = data.get("call_log")
        return cls(data["rules"], name=f"scripted:{path.name}", delay_s=float(data.get("delay_s", 0)),
                   call_log=str(log) if log else None)

    def _answer(self, messages: list[Message], params: ChatParams, index: int) -> str:
        prompt = messages[-1].content if messages else ""
        everything = "\n".join(m.content for m in messages)
        for rule in self.rules:
            tag = str(rule.get("tag", ""))
            if tag and not (params.tag == tag or params.tag.startswith(tag + ".")):
                continue
            if "sample" in rule and int(rule["sample"]) != params.sample_index:
                continue
            if not _all_in(rule.get("when", []), prompt):
                continue
            if not _all_in(rule.get("context", []), everything):
                continue
            self._last_rule = rule
            return str(rule["reply"])
        raise LookupError(f"{self.name}: no rule answers a call with tag {params.tag!r}")

    async def chat(self, messages: list[Message], params: ChatParams | None = None) -> Reply:
        if self.call_log:
            self._log(messages, params or ChatParams())
        reply = await self._scripted.chat(messages, params)
        rule = self._last_rule
        delay = self.delay_s + rule.get("delay_s", 0.0)
        until = Path(rule["until_file"]) if rule.get("until_file") else None
        loop = asyncio.get_running_loop()
        end = loop.time() + delay
        while loop.time() < end and not (until and until.exists()):
            await asyncio.sleep(min(0.1 if until else delay, end - loop.time()))
        return reply


    def _log(self, messages: list[Message], params: ChatParams) -> None:
        import json
        import os

        line = json.dumps({"pid": os.getpid(), "tag": params.tag, "sample": params.sample_index,
                           "request": request_hash(messages)})
        with open(self.call_log, "a") as fh:  # one write per line: whole lines across processes
            fh.write(line + "\n")


def request_hash(messages: list[Message]) -> str:
    """A call's identity for counting (the roles and contents of its messages)."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps([[m.role, m.content] for m in messages]).encode()
                          ).hexdigest()


def _all_in(needles, text: str) -> bool:
    return all(n in text for n in ([needles] if isinstance(needles, str) else needles))


def make_chat_model(spec: str, config: SolveConfig):
    """The raw chat model for ``spec`` (not yet journalled)."""
    if spec.startswith("scripted:"):
        return RulesModel.from_file(spec.split(":", 1)[1])
    from pdesharp.llm import default_cache_path, load_prices, make_model, set_default_prices

    if config.prices:
        set_default_prices(load_prices(config.prices))
    return make_model(spec, base_url=config.base_url,
                      cache=None if config.no_cache else default_cache_path(), **config.llm)


def builtin_roles(config: SolveConfig) -> Roles:
    """The built-in analyst's roles. :mod:`pdesharp.builtin` provides either
    ``make_roles(config) -> Roles`` or the classes ``BuiltinAnalyst()``, ``BuiltinAuthor()`` and
    ``BuiltinJudge(name=..., feedback=...)``."""
    try:
        from pdesharp import builtin
    except ImportError as exc:  # pragma: no cover - the package ships with pdesharp
        raise RuntimeError(f"the built-in analyst cannot be imported ({exc})") from None
    factory = getattr(builtin, "make_roles", None)
    if callable(factory):
        return factory(config)
    missing = [n for n in ("BuiltinAnalyst", "BuiltinAuthor", "BuiltinJudge")
               if not hasattr(builtin, n)]
    if missing:
        raise RuntimeError(
            "the built-in analyst (pdesharp.builtin) is not complete in this installation "
            f"(missing {', '.join(missing)}); pass --model provider:model to use a language "
            "model instead")
    return Roles(analyst=builtin.BuiltinAnalyst(), author=builtin.BuiltinAuthor(),
                 judges=[builtin.BuiltinJudge(name=n, feedback=config.feedback)
                         for n in JUDGE_NAMES],
                 reporter=None)


def facts_for(config: SolveConfig, task: Task) -> TaskFacts:
    """The task facts the prompts state, with the data and evaluation settings of ``config``
    (the same the run's evaluator is built with)."""
    return build_facts(task, config.task_facts, data_dir=config.data_dir,
                       dev_data=config.dev_data, test_data=config.test_data,
                       max_samples=config.max_samples,
                       timeout=config.timeout, convergence=config.convergence,
                       gpu=config.device == "cuda")


def _task_of(config: SolveConfig, store: RunStore) -> Task:
    """The task as solved: the run folder's copy, else the config's name or path."""
    try:
        return load_task_file(store.dir / "task.yaml")
    except TaskError:
        return load_task(config.task)


def build_roles(config: SolveConfig, store: RunStore, models: dict | None = None,
                task: Task | None = None, facts: TaskFacts | None = None) -> Roles:
    """LLM roles for ``config.model`` (and ``config.judges``), journalled in ``store``.
    ``models`` maps a spec to a ready chat model (tests inject scripted models this way);
    ``facts`` overrides the task facts read from the data (a replay passes the recorded ones).
    The task facts the prompts state are written to the run folder (``task_facts.json``)."""
    if config.builtin:
        return builtin_roles(config)
    models = models or {}
    cache: dict[str, RecordingModel] = {}

    def model(spec: str) -> RecordingModel:
        if spec not in cache:
            raw = models.get(spec) or make_chat_model(spec, config)
            cache[spec] = RecordingModel(raw, store, max_usd=config.max_usd,
                                         max_tokens=config.max_tokens)
        return cache[spec]

    main = model(config.model)
    judge_specs = config.judges or [config.model] * 3
    if len(judge_specs) != 3:
        raise ValueError(f"--judges needs three model specs, got {len(judge_specs)}")
    facts = facts or facts_for(config, task or _task_of(config, store))
    (store.dir / "task_facts.json").write_text(facts.model_dump_json(indent=2))
    judges = [LLMJudge(model(s), name=n, feedback=config.feedback, convergence=config.convergence,
                       facts=facts, code_budget=config.prompt_budget)
              for s, n in zip(judge_specs, JUDGE_NAMES)]
    goal, timed = _goal(config)
    # Genesis calls are independent: let the endpoint's own concurrency limit pace them.
    return Roles(analyst=LLMAnalyst(main, facts=facts, feedback=config.feedback, goal=goal),
                 author=LLMAuthor(main, workers=max(8, config.workers), feedback=config.feedback,
                                  facts=facts, mode=config.genesis, goal=timed),
                 judges=judges, reporter=main, models=list(cache.values()), facts=facts)


def _goal(config: SolveConfig) -> tuple[str, str]:
    """The run's time objective in words, as the config states it (the pipeline restates it
    once the audit gave the rule its floor: :meth:`Rule.goal_words`)."""
    return Rule.of(config).goal_words(config.metric)
