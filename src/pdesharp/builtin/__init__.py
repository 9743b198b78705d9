"""The built-in numerical analyst: a "model" that needs no network.

It fills the pipeline's roles (:mod:`pdesharp.roles`) with symbolic analysis and a catalogue of
numerical building blocks:

* :class:`BuiltinAnalyst` — classification, routes, operator decomposition, stability bounds
  (SymPy, evaluated on the data's bounds);
* :class:`BuiltinAuthor` — N distinct solver designs from the scheme families
  (:mod:`pdesharp.builtin.families`) rendered into standalone NumPy/SciPy files;
* :class:`BuiltinJudge` — a deterministic, feedback-driven search over the design axes through
  SEARCH/REPLACE patches;
* :func:`compare_analyses` — where an LLM's analysis contradicts the symbolic one.

Tasks outside the supported class raise :class:`UnsupportedTask` naming the offending construct
and the rewrite the catalogue supports, if any (:func:`support` says so before a run).
"""

from __future__ import annotations

from pdesharp.builtin.analyst import BuiltinAnalyst, DataBounds
from pdesharp.builtin.compare import compare_analyses
from pdesharp.builtin.author import BuiltinAuthor, render
from pdesharp.builtin.judge import STRATEGIES, BuiltinJudge
from pdesharp.builtin.structure import UnsupportedTask, structure

__all__ = ["BuiltinAnalyst", "BuiltinAuthor", "BuiltinJudge", "DataBounds", "STRATEGIES",
           "UnsupportedTask", "compare_analyses", "make_roles", "render", "structure"]


def make_roles(config):
    """The pipeline's hook (``pdesharp.rolesets``): built-in roles for a ``SolveConfig``.

    The analyst reads the field bounds from the dev data when it can find it.
    """
    from pdesharp.roles import JUDGE_NAMES, Roles
    from pdesharp.task import load_task

    data_dir = getattr(config, "data_dir", None)
    if getattr(config, "task", ""):
        # fail before the run starts, with the offending term named, if the PDE is outside
        # the catalogue or its analysis fails (UnsupportedTask is a ValueError: the CLI reports
        # it in one line and removes the fresh run folder). One symbolic reading, on the names
        # the code uses, within support's clock; the refusal says the user's names
        from pdesharp.builtin.support import support

        task = load_task(config.task)
        got = support(task, data_dir=data_dir if data_dir is not None else _default_data_dir(),
                      dev_data=getattr(config, "dev_data", None))
        if not got.supported:
            raise UnsupportedTask.said(got.reason)
    analyst = BuiltinAnalyst(data_dir=data_dir if data_dir is not None else _default_data_dir(),
                             dev_data=getattr(config, "dev_data", None))
    shared: set = set()  # the three judges never propose the same design twice
    judges = [BuiltinJudge(name=n, feedback=config.feedback, shared=shared) for n in JUDGE_NAMES]
    return Roles(analyst=analyst, author=BuiltinAuthor(), judges=judges, reporter=None)


def _default_data_dir():
    from pdesharp.data.paths import data_dir

    return data_dir()
