"""The reference audit's sentences in a run's report, from the block a run stores
(:func:`pdesharp.audit.runs.summary`): plain formatting, so that writing a report (``pdesharp
report``) does not import the audit's solvers and SymPy."""

from __future__ import annotations

from pdesharp.synthesis.ranking import Rule


def report_lines(block: dict | None) -> list[str]:
    """Lines for the report's result section (plain sentences)."""
    if not block:
        return []
    if block.get("status") != "ok":
        return [f"- Reference audit: none ({block.get('reason', '')})"]
    ref = block["reference_error"]
    rounding = block.get("round_off_floor")
    stated = block.get("source") == "stated"  # no audit: what the file's generator estimated
    if stated:
        lines = [f"- Reference error of the dev data: {ref:.3e}, as the data file states it (its "
                 "generator's estimate of the nRMSE against the PDE's solution; not measured by "
                 "pdesharp: " + (block.get("no_audit") or "no audit")
                 + (f"; rounding to its stored type alone costs {rounding:.1e}"
                    if rounding is not None else "") + f"; file: `{block['audit']}`)"]
    else:
        lines = [f"- Reference error of the dev data: {ref:.3e} (nRMSE of the reference against "
                 f"a converged float64 solution of the PDE, {block['samples']} samples"
                 + (f"; rounding to its stored type alone costs {rounding:.1e}"
                    if rounding is not None else "")
                 + f"; audit: `{block['audit']}`)"]
    if block.get("best_nrmse_vs_converged") is not None:
        lines.append(f"- Best solver against the converged solution: "
                     f"{block['best_nrmse_vs_converged']:.3e} (against the reference: "
                     f"{block['best_nrmse']:.3e})")
    near = block.get("closest_to_converged")
    if near:
        lines.append(f"- Closest to the converged solution: `{near['id']}`, "
                     f"{near['nrmse_vs_converged']:.3e} from it (its score against the "
                     f"reference: {near['nrmse']:.3e}); use it when solving the PDE matters "
                     "more than matching this reference")
    if block.get("best_below_reference_error"):
        best = block["best_nrmse"]
        same = block.get("best_at_reference_error")  # older summaries: the default tie rule
        if same if same is not None else Rule().same_score(best, ref):
            lines.append(
                f"- The best solver agrees with the reference about as closely as the reference "
                f"agrees with the PDE (both {ref:.3e}, a tie under the ranking rule): it is "
                "at the data's own accuracy, where the score can no longer tell solving the PDE "
                "better from reproducing the reference's errors; "
                + ("`pdesharp data audit` measures how well it solves the PDE." if stated else
                   "the number against the converged solution measures how well it solves "
                   "the PDE."))
        else:
            lines.append(
                f"- The best solver agrees with the reference ({best:.3e}) better than the "
                f"reference agrees with the PDE ({ref:.3e}). Below {ref:.1e} the score rewards "
                "reproducing the reference's own errors; "
                + ("`pdesharp data audit` measures how well it solves the PDE (its distance "
                   "from a converged solution)." if stated else
                   "the number against the converged solution is the one that measures how "
                   "well it solves the PDE."))
    if block.get("stopped_at_floor"):
        lines.append(f"- The search stopped at the reference floor: the best score "
                     f"{block['best_nrmse']:.3e} is within {block['floor'] / ref:.2f} x the "
                     f"reference error ({block['floor']:.3e}); any further improvement the "
                     "tournament counts would land below the reference's own error, where it "
                     "cannot be told apart from fitting the reference's errors.")
    return lines
