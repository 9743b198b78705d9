"""Judges: rankings, feedback-driven proposals along the design axes, patches that apply."""

from __future__ import annotations

import asyncio

import pytest

from pdesharp.builtin import BuiltinAnalyst, BuiltinAuthor, BuiltinJudge, DataBounds
from pdesharp.builtin.author import render
from pdesharp.builtin.families import family
from pdesharp.builtin.judge import constant_patch, read_design
from pdesharp.records import Candidate, EvalResult
from pdesharp.roles import PoolEntry
from pdesharp.synthesis.patch import apply_patch
from pdesharp.task import load_task

from builtin_helpers import EXAMPLES


def ok(score: float) -> EvalResult:
    return EvalResult(status="ok", split="dev", feedback="nrmse", nrmse=score, solver_seconds=1.0)


def D(fam: str, **axes):
    return family(fam).design(**axes)


def FV(recon, limiter, riemann, integrator, cfl, **kw):
    return D("fv", RECONSTRUCTION=recon, LIMITER=limiter, RIEMANN=riemann, INTEGRATOR=integrator,
             CFL=cfl, **kw)


def entry(task, design, cid: str, score: float | None = None, **kw) -> PoolEntry:
    c = Candidate(id=cid, code=render(task, design), origin="genesis", title=cid, **kw)
    return PoolEntry(candidate=c, result=ok(score) if score is not None else None)


@pytest.fixture(scope="module")
def burgers():
    task = load_task("burgers")
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (-1.0, 1.0)})).analyse_sync(task)
    return task, analysis


def test_rendered_design_reads_back():
    task = load_task("burgers")
    d = FV("weno5", "van_leer", "hll", "rk4", 0.3, REFINE=2)
    assert read_design(render(task, d)) == d


def test_patch_applies_through_the_pipeline_patch_path(burgers):
    task, _ = burgers
    code = render(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4))
    patch = constant_patch(code, {"CFL": 0.25, "LIMITER": "minmod"})
    new = apply_patch(code, patch)
    d = read_design(new)
    assert (d["CFL"], d["LIMITER"]) == (0.25, "minmod")
    compile(new, "patched", "exec")
    assert "# Courant number of the explicit step" in new  # the line's comment survives


def test_nominations_differ_between_strategies(burgers):
    task, analysis = burgers
    pool = [PoolEntry(candidate=c) for c in asyncio.run(BuiltinAuthor().write(task, analysis, 5))]
    noms = [asyncio.run(BuiltinJudge(name=f"judge-{i}").nominate(task, analysis, pool)) for i in (1, 2, 3)]
    assert noms[0].ranking[0] == pool[0].candidate.id  # best predicted first
    assert len({n.nominee for n in noms}) >= 2  # the three judges explore differently
    pool[3].result = ok(1e-5)
    nom = asyncio.run(BuiltinJudge(name="judge-1").nominate(task, analysis, pool))
    assert nom.nominee == pool[3].candidate.id and "measured" in nom.reasons[nom.nominee]


def test_accuracy_judge_abandons_an_axis_that_did_not_pay_off(burgers):
    task, analysis = burgers
    judge = BuiltinJudge(name="judge-1")
    base = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4), "b", 3e-4)
    asyncio.run(judge.nominate(task, analysis, [base]))
    p1 = asyncio.run(judge.propose(task, base, [base], "nrmse"))
    assert p1.patch and p1.title.startswith("CFL ->")  # accuracy: a smaller step first
    child = PoolEntry(candidate=base.candidate.model_copy(update={
        "id": "c", "code": apply_patch(base.candidate.code, p1.patch), "parents": ["b"],
        "title": p1.title}), result=ok(2.99e-4))  # no gain: the error is not temporal
    p2 = asyncio.run(judge.propose(task, base, [base, child], "nrmse"))
    assert not p2.title.startswith("CFL")


def test_an_axis_dead_on_one_grid_is_asked_again_on_a_finer_one(burgers):
    """Issue 27 (Swift-Hohenberg stopped at 1.52e-6, "every judge declined"): a smaller step
    that did not pay off on the data grid (the spatial error dominated) says nothing about the
    step once the grid is refined, where the time error may dominate; the same dead move from
    a design equal on every other axis stays dead."""
    task, analysis = burgers
    judge = BuiltinJudge(name="judge-1")
    coarse = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4), "b", 3e-4)
    asyncio.run(judge.nominate(task, analysis, [coarse]))
    p1 = asyncio.run(judge.propose(task, coarse, [coarse], "nrmse"))
    assert p1.title.startswith("CFL ->")
    child = PoolEntry(candidate=coarse.candidate.model_copy(update={
        "id": "c", "code": apply_patch(coarse.candidate.code, p1.patch), "parents": ["b"],
        "title": p1.title}), result=ok(2.9e-4))  # 1e-5: no gain under a 3e-4 spatial error
    assert not asyncio.run(judge.propose(task, coarse, [coarse, child], "nrmse")) \
        .title.startswith("CFL")
    fine = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4, REFINE=2), "f", 8e-5,
                 parents=["b"])
    twin = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4), "t", 3e-4)
    # on the finer grid (8e-5) the step's 1e-5, measured above, is worth an evaluation
    # (pdesharp.builtin.evidence: above (1 - saturation) x 8e-5)
    pool, titles = [coarse, child, fine, twin], []
    for i in range(8):  # the finer grid's moves, each answered "no gain", until CFL comes up
        prop = asyncio.run(judge.propose(task, fine, pool, "nrmse"))
        titles.append(prop.title)
        if prop.declined or prop.title.startswith("CFL"):
            break
        pool.append(PoolEntry(candidate=fine.candidate.model_copy(update={
            "id": f"f{i}", "code": prop.code or apply_patch(fine.candidate.code, prop.patch),
            "parents": ["f"], "title": prop.title}), result=ok(7.99e-5)))
    assert titles[-1].startswith("CFL ->"), titles
    assert not asyncio.run(judge.propose(task, twin, pool, "nrmse")).title.startswith("CFL")


def test_a_larger_step_that_lost_accuracy_does_not_stop_a_smaller_one(burgers):
    """Issue 27 (Swift-Hohenberg stopped at 1.52e-6 again, "every judge declined"): the robust
    judge's larger step (CFL 0.4 -> 0.6) lost accuracy, and that killed the CFL axis for the
    accuracy judge too, so the smaller step that reached 3.1e-8 in an earlier run was never
    tried. A dead move has a direction: the opposite one stays open, the same one stays dead."""
    task, analysis = burgers
    judge = BuiltinJudge(name="judge-1")
    base = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4), "b", 3e-4)
    asyncio.run(judge.nominate(task, analysis, [base]))
    larger = apply_patch(base.candidate.code, constant_patch(base.candidate.code, {"CFL": 0.6}))
    child = PoolEntry(candidate=base.candidate.model_copy(update={
        "id": "c", "code": larger, "parents": ["b"], "title": "CFL -> 0.6"}), result=ok(9e-4))
    prop = asyncio.run(judge.propose(task, base, [base, child], "nrmse"))
    assert prop.title.startswith("CFL ->"), prop.title
    assert read_design(apply_patch(base.candidate.code, prop.patch))["CFL"] < 0.4
    smaller = PoolEntry(candidate=base.candidate.model_copy(update={
        "id": "s", "code": apply_patch(base.candidate.code, prop.patch), "parents": ["b"],
        "title": prop.title}), result=ok(2.99e-4))  # no gain: now both directions are dead
    again = asyncio.run(judge.propose(task, base, [base, child, smaller], "nrmse"))
    assert not again.title.startswith("CFL"), again.title


def test_robust_judge_and_debug_after_a_blow_up(burgers):
    task, _ = burgers
    base = entry(task, FV("muscl", "mc", "rusanov", "rk4", 0.8), "b")
    base.result = EvalResult(status="nan", split="dev", feedback="nrmse", message="NaN in output")
    judge = BuiltinJudge(name="judge-2")
    asyncio.run(judge.nominate(task, burgers[1], [base]))  # the tournament nominates first
    fix = asyncio.run(judge.debug(base))
    d = read_design(apply_patch(base.candidate.code, fix.patch))
    assert d["CFL"] == pytest.approx(0.4) and d["LIMITER"] == "minmod"
    prop = asyncio.run(judge.propose(task, base, [base], "nrmse"))
    assert read_design(apply_patch(base.candidate.code, prop.patch))["CFL"] < 0.8


def test_debug_cures_a_programming_error_by_its_cause_not_by_a_smaller_step(burgers):
    """Issue 26 item 4: a TypeError in the solver's code (the KS crash, ``float(-c)`` on a list)
    is not cured by halving CFL. A file that differs from its design's catalogue code gets that
    code back; the catalogue's own code failing gets a design of another family."""
    task, analysis = burgers
    design = FV("muscl", "mc", "rusanov", "ssprk3", 0.4)
    failed = EvalResult(status="error", split="dev", feedback="nrmse", error_type="TypeError",
                        message="TypeError during the solver call")
    edited = entry(task, design, "e")
    edited.candidate = edited.candidate.model_copy(update={
        "code": edited.candidate.code.replace("def flux(W, X, t, prm, axis):",
                                              "def flux(W, X, t, prm, axis):\n    W = -W")})
    edited.result = failed
    judge = BuiltinJudge(name="judge-2")
    asyncio.run(judge.nominate(task, analysis, [edited]))
    fix = asyncio.run(judge.debug(edited))
    assert fix.patch is None and fix.code == render(task, design)
    assert "TypeError" in fix.justification and "programming error" in fix.justification
    own = entry(task, design, "g")
    own.result = failed
    fix = asyncio.run(judge.debug(own))
    assert fix.code is not None and read_design(fix.code).family != "fv", fix.title
    # a blow-up of the same design is still the step's: the family's repair
    own.result = EvalResult(status="error", split="dev", feedback="nrmse",
                            error_type="FloatingPointError")
    judge = BuiltinJudge(name="judge-3")
    asyncio.run(judge.nominate(task, analysis, [own]))
    fix = asyncio.run(judge.debug(own))
    assert fix.patch is not None and "CFL" in fix.title


def test_hybrid_judge_borrows_from_the_runner_up(burgers):
    task, _ = burgers
    a = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4), "a", 1e-4)
    b = entry(task, FV("weno5", "mc", "hll", "ssprk3", 0.4), "b", 2e-4)
    prop = asyncio.run(BuiltinJudge(name="judge-3").propose(task, a, [a, b], "nrmse"))
    assert prop.parents == ["a", "b"]
    d = read_design(apply_patch(a.candidate.code, prop.patch))
    assert (d["RECONSTRUCTION"], d["RIEMANN"]) in {("weno5", "rusanov"), ("muscl", "hll")}


def test_exhausted_neighbours_switch_family_by_full_rewrite():
    task = load_task("darcy")
    analysis = BuiltinAnalyst().analyse_sync(task)
    judge = BuiltinJudge(name="judge-1")
    cg = {"SOLVER": "cg"}  # the neighbourhood of e0: one change of each axis, all run
    pool = [entry(task, d, f"e{i}", 1e-3 * (i + 1)) for i, d in enumerate(
        [D("elliptic", **cg), D("elliptic", FACE_MEAN="harmonic", **cg),
         D("elliptic", GRID="nodes", **cg), D("elliptic", SOLVER="direct"),
         D("elliptic", CG_TOL=1e-12, **cg)])]
    with pytest.raises(ValueError, match="empty pool"):
        asyncio.run(judge.nominate(task, analysis, []))
    asyncio.run(judge.nominate(task, analysis, pool))
    prop = asyncio.run(judge.propose(task, pool[0], pool, "nrmse"))
    assert prop.code is not None and prop.patch is None
    assert read_design(prop.code) == D("elliptic", GRID="nodes", FACE_MEAN="harmonic", **cg)
    pool.append(entry(task, read_design(prop.code), "e5", 6e-3))
    again = asyncio.run(judge.propose(task, pool[0], pool, "nrmse"))
    # nothing left: the judge declines (nothing is run) instead of resubmitting a solver
    assert again.declined and again.code is None and again.patch is None


def test_repair_patch_sends_the_whole_file(burgers):
    task, _ = burgers
    judge = BuiltinJudge(name="judge-1")
    base = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4), "b", 3e-4)
    prop = asyncio.run(judge.propose(task, base, [base], "nrmse"))
    fixed = asyncio.run(judge.repair_patch(prop, "SEARCH text not found"))
    assert fixed.patch is None and read_design(fixed.code) == read_design(apply_patch(base.candidate.code, prop.patch))


def test_judges_of_one_tournament_never_propose_the_same_design():
    task = load_task("advection")
    # (an exact base would get no proposal at all: every other design is predicted less
    # accurate, test_evidence.py)
    base = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4), "x", 1e-3)
    shared: set = set()
    judges = [BuiltinJudge(name=f"judge-{i}", shared=shared) for i in (1, 2)]
    props = [asyncio.run(j.propose(task, base, [base], "nrmse")) for j in judges]
    codes = [p.code or apply_patch(base.candidate.code, p.patch) for p in props]
    assert codes[0] != codes[1]


def test_a_foreign_base_gets_a_catalogue_rewrite(burgers):
    task, analysis = burgers
    seed = PoolEntry(candidate=Candidate(id="seed", code="def solver(u0_batch, t_coordinate, nu):\n"
                                         "    return None\n", origin="seed"), result=ok(1e-2))
    judge = BuiltinJudge(name="judge-1")
    asyncio.run(judge.nominate(task, analysis, [seed]))
    prop = asyncio.run(judge.propose(task, seed, [seed], "nrmse"))
    assert prop.code is not None and read_design(prop.code) is not None


def test_debug_of_a_failed_exact_propagator_rewrites_instead_of_crashing():
    # the exact propagator has no time step or grid axis to repair: an older judge tried to
    # patch a GRID constant here and ended the run with a KeyError
    task = load_task("advection")
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (-1.0, 1.0)})).analyse_sync(task)
    base = entry(task, D("exact"), "g0")
    base.result = EvalResult(status="error", split="dev", feedback="nrmse", message="boom")
    judge = BuiltinJudge(name="judge-1")
    asyncio.run(judge.nominate(task, analysis, [base]))
    fix = asyncio.run(judge.debug(base))
    assert fix.code is not None and fix.code != base.candidate.code
    assert read_design(fix.code).family != "exact" or read_design(fix.code) != D("exact")


def _walk(task, analysis, base, strategy, steps=25):
    """Let one judge propose repeatedly on a base, each child measured a little worse (so no
    axis pays off): the sequence of proposals until it declines."""
    judge = BuiltinJudge(name="judge-x", strategy=strategy)
    asyncio.run(judge.nominate(task, analysis, [base]))
    pool, props = [base], []
    for i in range(steps):
        prop = asyncio.run(judge.propose(task, base, pool, "nrmse"))
        if prop.declined:
            break
        code = prop.code if prop.code is not None else apply_patch(base.candidate.code, prop.patch)
        props.append((prop, code))
        child = Candidate(id=f"c{i}", code=code, origin="patch", parents=[base.candidate.id],
                          title=prop.title)
        pool.append(PoolEntry(candidate=child, result=ok(base.result.score * 1.01)))
    return props


@pytest.mark.parametrize("strategy", ["accuracy", "robust", "hybrid"])
def test_no_proposal_repeats_a_computation_or_edits_an_unused_axis(burgers, strategy):
    from pdesharp.builtin.author import problem
    from pdesharp.builtin.families import design_key

    task, analysis = burgers
    base = entry(task, FV("weno5", "mc", "rusanov", "ssprk3", 0.4), "b", 3e-4)
    p = problem(task)
    keys = {design_key(read_design(base.candidate.code), p)}
    props = _walk(task, analysis, base, strategy)
    assert props, "the judge proposed nothing"
    for prop, code in props:
        # a limiter under WENO5 changes nothing: never proposed, and every proposal is a new
        # computation (its key, the active axes' values, differs from every earlier one)
        assert not prop.title.startswith("LIMITER")
        k = design_key(read_design(code), p)
        assert k not in keys, prop.title
        keys.add(k)


def test_a_flux_free_law_has_no_flux_axes_to_edit():
    task = load_task("reacdiff1d")
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (0.0, 1.0)})).analyse_sync(task)
    cands = asyncio.run(BuiltinAuthor().write(task, analysis, 6))
    for c in cands:
        head = c.code.split("# ---- end of design axes")[0]
        for axis in ("RIEMANN", "LIMITER", "RECONSTRUCTION"):
            assert f"\n{axis} = " not in head, (c.title, axis)
    base = PoolEntry(candidate=cands[0], result=ok(1e-4))
    for prop, _ in _walk(task, analysis, base, "accuracy", steps=6):
        assert prop.title.split(" ")[0] not in ("RIEMANN", "LIMITER", "RECONSTRUCTION")


def test_designs_that_differ_only_in_an_unused_axis_are_one_design(burgers):
    from pdesharp.builtin.author import problem
    from pdesharp.builtin.families import design_key

    task, analysis = burgers
    p = problem(task)
    a, b = FV("weno5", "mc", "hll", "rk4", 0.3), FV("weno5", "minmod", "hll", "rk4", 0.3)
    assert design_key(a, p) == design_key(b, p)
    assert design_key(FV("muscl", "mc", "hll", "rk4", 0.3), p) != \
        design_key(FV("muscl", "minmod", "hll", "rk4", 0.3), p)
    designs = BuiltinAuthor().designs(task, analysis, 16)
    assert len({design_key(d, p) for d in designs}) == len(designs)


def test_a_score_at_round_off_ends_the_search():
    task = load_task("advection")
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (-1.0, 1.0)})).analyse_sync(task)
    pool = [entry(task, D("exact"), "g0", 3e-16), entry(task, D("exact", SYMBOL="fd2"), "g1"),
            entry(task, FV("weno5", "mc", "rusanov", "ssprk3", 0.4), "g2")]
    for i in (1, 2, 3):  # every strategy nominates the exact solver: no new evaluation
        judge = BuiltinJudge(name=f"judge-{i}")
        assert asyncio.run(judge.nominate(task, analysis, pool)).nominee == "g0"
        assert asyncio.run(judge.propose(task, pool[0], pool, "nrmse")).declined


def test_evaluations_left_are_spent_on_untried_families_not_on_declines():
    """Issue 26 item 5: FitzHugh-Nagumo between Neumann walls stopped at 1.2e-5 with 6 of 8
    evaluations spent ("every judge declined"): the cosine-series designs all measured alike and
    the method of lines was predicted less accurate (time order 3 against 4), so never run; its
    order-6 design was the better one. With evaluations left (--max-evals) and the score above
    the floor, the exploring judges nominate the other family's untried designs; without a
    limit the predictions decide as before."""
    from pdesharp.builtin.author import design_facts, problem
    from pdesharp.builtin.families import candidate_designs
    from pdesharp.roles import RoundInfo

    task = load_task(EXAMPLES / "allen_cahn_neumann1d.yaml")
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (-1.0, 1.0)})).analyse_sync(task)
    p = problem(task, design_facts(analysis))
    designs = candidate_designs(p)
    spectral = [d for d in designs if d.family == "wall_spectral"]
    mol = [d for d in designs if d.family == "mol"]
    assert spectral and mol
    pool = [PoolEntry(candidate=Candidate(id=f"s{i}", code=render(task, d, p), origin="genesis",
                                          title=f"s{i}"), result=ok(1.96e-5 + 1e-8 * i))
            for i, d in enumerate(spectral)]
    pool += [PoolEntry(candidate=Candidate(id=f"m{i}", code=render(task, d, p), origin="genesis",
                                           title=f"m{i}")) for i, d in enumerate(mol)]
    left = RoundInfo(cycle=0, round=2, max_rounds=4, cycles=2, best_score=1.96e-5, eval_limit=8,
                     evals_used=len(spectral))
    picks = {}
    for info in (left, left.model_copy(update={"eval_limit": None})):
        judge = BuiltinJudge(name="judge-2")  # the robust judge explores
        judge.observe(info)
        picks[info.eval_limit] = asyncio.run(judge.nominate(task, analysis, pool)).nominee
    assert picks[8].startswith("m"), picks  # an untried method-of-lines design
    assert picks[None].startswith("s"), picks  # no limit: the prediction keeps the spectral one
    # once the pool holds nothing untried, a proposal rewrites to another family instead of
    # declining (and declines when no evaluation is left)
    measured = pool[:len(spectral)]
    judge = BuiltinJudge(name="judge-1")
    judge.observe(left)
    asyncio.run(judge.nominate(task, analysis, measured))
    props = [asyncio.run(judge.propose(task, measured[0], measured, "nrmse")) for _ in range(6)]
    rewrites = [pr for pr in props if pr.code is not None and not pr.declined]
    assert rewrites and read_design(rewrites[0].code).family != "wall_spectral", \
        [pr.title for pr in props]
    spent = left.model_copy(update={"evals_used": 8})
    judge = BuiltinJudge(name="judge-1")
    judge.observe(spent)
    asyncio.run(judge.nominate(task, analysis, measured))
    props = [asyncio.run(judge.propose(task, measured[0], measured, "nrmse")) for _ in range(6)]
    assert not any(pr.code is not None and read_design(pr.code).family != "wall_spectral"
                   for pr in props), [pr.title for pr in props]


def test_every_judge_refines_the_cells_of_a_riemann_problem(example_data):
    """Issue 26 item 6, shocks: at a discontinuity the error falls as the cell size whatever the
    step, the order or the flux, so every judge refines first, the robust one by a 4x leap off
    the output grid (Sod between walls: a 2x grid 8.0e-3, 4x 3.5e-3, 8x 1.6e-3 from 1.5e-2 on
    the output grid; the round-2 8x grid brings 8 evaluations below 2e-3, where the accuracy
    judge alone, doubling once per round, stopped at 3.9e-3)."""
    task = load_task(str(EXAMPLES / "sod1d.yaml"))
    bounds = DataBounds.from_reference(task, explicit=example_data / "sod1d" / "dev.hdf5")
    analysis = BuiltinAnalyst(data_bounds=bounds).analyse_sync(task)
    shared: set = set()
    judges = [BuiltinJudge(name=f"judge-{i}", shared=shared) for i in (1, 2, 3)]
    weno = FV("weno5", "mc", "rusanov", "ssprk3", 0.4)
    base = entry(task, weno, "g0", 1.5e-2)
    refine = []
    for judge in judges:
        asyncio.run(judge.nominate(task, analysis, [base]))
        prop = asyncio.run(judge.propose(task, base, [base], "nrmse"))
        refine.append(read_design(apply_patch(base.candidate.code, prop.patch))["REFINE"]
                      if prop.title.startswith("REFINE") else None)
    assert refine[:2] == [2, 4], refine  # accuracy: 2x; robust: the leap
    # past the output grid the leap would cost 16x a base that already takes 16x: 2x steps
    fine = entry(task, weno.with_(REFINE=4), "c4", 3.5e-3)
    judge = BuiltinJudge(name="judge-2")
    asyncio.run(judge.nominate(task, analysis, [fine]))
    prop = asyncio.run(judge.propose(task, fine, [fine], "nrmse"))
    assert read_design(apply_patch(fine.candidate.code, prop.patch))["REFINE"] == 8


def _timed(score: float, seconds: float) -> EvalResult:
    return EvalResult(status="ok", split="dev", feedback="nrmse", nrmse=score,
                      solver_seconds=seconds)


def _speed_info(judge: BuiltinJudge, bar: float) -> None:
    from pdesharp.roles import RoundInfo
    judge.observe(RoundInfo(cycle=0, round=2, max_rounds=4, cycles=1,
                            objective="fastest-below:1e-2", bar=bar, best_score=3e-4,
                            executed=2))


def test_seeking_speed_a_larger_step_measured_faster_inside_the_timing_margin_stays_open(burgers):
    """Issue 27 (2D Kuramoto-Sivashinsky, fastest-below:4.75e-2, stopped at 8.1e-4 by "every
    judge declined"): CFL 0.15 -> 0.3 was measured 1.22x faster, inside the rule's 1.3 margin,
    and the larger step was dead. A speed move is offered because the cost model predicts it
    clearly faster; a measured gain agrees with that, so the direction stays open: from the
    child the robust judge takes the larger step again (0.6 -> 0.9)."""
    task, analysis = burgers
    judge = BuiltinJudge(name="judge-2")
    assert judge.strategy == "robust"
    _speed_info(judge, 1e-2)
    base = entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4), "b")
    base = PoolEntry(candidate=base.candidate, result=_timed(3e-4, 1.0))
    larger = apply_patch(base.candidate.code, constant_patch(base.candidate.code, {"CFL": 0.6}))
    child = PoolEntry(candidate=base.candidate.model_copy(update={
        "id": "c", "code": larger, "parents": ["b"], "title": "CFL -> 0.6"}),
        result=_timed(4e-4, 0.82))  # 1.22x faster: inside the 1.3 margin, still eligible
    asyncio.run(judge.nominate(task, analysis, [base, child]))
    asyncio.run(judge.propose(task, base, [base, child], "nrmse"))  # the move is judged here
    steps = []
    for _ in range(4):
        prop = asyncio.run(judge.propose(task, child, [base, child], "nrmse"))
        if prop.patch:
            steps.append(read_design(apply_patch(child.candidate.code, prop.patch))["CFL"])
    assert 0.9 in steps, steps


def test_seeking_speed_the_robust_judge_nominates_the_fastest_eligible_design(burgers):
    """The run's rule counts times within its margin as equally fast and then prefers the
    lower score, so its pick can be the slower of two eligible designs; the robust judge
    pushes from the faster one (the accuracy judge keeps the rule's pick)."""
    task, analysis = burgers
    slow = PoolEntry(candidate=entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4),
                                     "slow").candidate, result=_timed(3e-4, 1.0))
    fast = PoolEntry(candidate=entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.6),
                                     "fast").candidate, result=_timed(4e-4, 0.82))
    picks = {}
    for name in ("judge-1", "judge-2"):
        judge = BuiltinJudge(name=name)
        _speed_info(judge, 1e-2)
        picks[judge.strategy] = asyncio.run(judge.nominate(task, analysis, [slow, fast])).nominee
    assert picks == {"accuracy": "slow", "robust": "fast"}


@pytest.mark.parametrize("cheap_seconds, pick", [(1.0, "cheap"), (1.5, "costly")])
def test_seeking_speed_times_inside_the_margin_go_to_the_design_predicted_cheaper(
        burgers, cheap_seconds, pick):
    """Issue 27 (2D Swift-Hohenberg, fastest-below:1e-6, on a loaded machine): a 1.5x grid
    measured 0.71 s against the 2x grid's 0.62 s and was 2x faster timed alone; the robust judge
    pushed from the 2x grid only. Times within the rule's margin (1.3) of the least are noise
    apart, and among them the cost model decides: CFL 0.6 is predicted 1.5x cheaper than 0.4
    (same cells, 2/3 of the steps). Measured 1.0 s against 0.9 s (1.11x, inside) it is the base;
    measured 1.5 s (1.67x, outside the margin) the timing stands and the 0.9 s design is."""
    task, analysis = burgers
    costly = PoolEntry(candidate=entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.4),
                                       "costly").candidate, result=_timed(3e-4, 0.9))
    cheap = PoolEntry(candidate=entry(task, FV("muscl", "mc", "rusanov", "ssprk3", 0.6),
                                      "cheap").candidate, result=_timed(4e-4, cheap_seconds))
    judge = BuiltinJudge(name="judge-2")
    assert judge.strategy == "robust"
    _speed_info(judge, 1e-2)
    assert asyncio.run(judge.nominate(task, analysis, [costly, cheap])).nominee == pick


def test_seeking_speed_a_flux_free_split_takes_longer_steps_and_plain_strang():
    """The split family's cost counts its Strang steps (SPLIT_DT per output interval, three
    Strang steps per Richardson step); with a constant cost no split move was ever predicted
    faster, and an eligible split solver under fastest-below was left as it came. From
    Richardson at dt/32 the judges now offer plain Strang (a third of the work) and a 4x
    longer step, and nothing that costs more."""
    task = load_task("reacdiff1d")
    analysis = BuiltinAnalyst(data_bounds=DataBounds(fields={"u": (0.0, 1.0)})).analyse_sync(task)
    from pdesharp.builtin.author import problem
    p = problem(task)
    fam = family("split")
    span = p.dt_output
    rich = D("split", SYMBOL="spectral", SPLIT_DT=span / 32, SPLITTING="richardson")
    assert fam.cost(rich, p) == pytest.approx(3 * 32 * fam.cost(D("split"), p))
    assert fam.cost(rich.with_(SPLIT_DT=span / 4), p) == pytest.approx(fam.cost(rich, p) / 8)
    base = PoolEntry(candidate=entry(task, rich, "b").candidate, result=_timed(1e-6, 1.0))
    moves = set()
    for name in ("judge-1", "judge-2", "judge-3"):
        judge = BuiltinJudge(name=name)
        _speed_info(judge, 1e-2)
        asyncio.run(judge.nominate(task, analysis, [base]))
        for _ in range(3):
            prop = asyncio.run(judge.propose(task, base, [base], "nrmse"))
            if prop.patch:
                new = read_design(apply_patch(base.candidate.code, prop.patch))
                assert fam.cost(new, p) < fam.cost(rich, p), prop.title
                moves.add((new["SPLITTING"], new["SPLIT_DT"]))
    assert ("strang", span / 32) in moves and ("richardson", span / 8) in moves, moves
