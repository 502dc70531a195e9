"""headgrad.inspect: per-head captures, hook points, patching, ablation and attribution.

    with headgrad.inspect.Capture(model, ["pattern"]) as cap:
        model(tokens)
    cap["layers.0.self_attn.pattern"]          # NumPy (N, H, L, S)

    with headgrad.inspect.Hooks(model) as hooks:
        hooks.add("layers.1.self_attn.z", lambda z, ctx: z * 0, head=3)
        logits = model(tokens)                 # head 3 of layer 1 zero-ablated

Names follow headgrad's hook points ("layers.0.self_attn.z"); TransformerLens's
"blocks.0.attn.hook_z" is the same place (docs/inspect.md has the table).
"""
from ._headgrad.inspect import (  # noqa: F401
    ActivationCache, Capture, HeadAblation, HeadImportance, HookContext, Hooks, LogitDifference,
    MechanismScores, Patching, PatchingGrid, ablate_heads, attention_layers,
    attention_parameter_count, corrupt_recall_query, direct_logit_attribution, greedy_order,
    head_grad_norms, head_importance, head_parameter_counts, hook_points, importance_order,
    logit_difference, logit_lens, mechanism_scores, mechanism_scores_of_patterns, pruning_curve,
    random_order, random_pruning_band, run_with_cache, taps,
)


def run_with_hooks(model, input, fwd_hooks=()):
    """model(input) with hooks for this one run (TransformerLens's run_with_hooks):
    fwd_hooks is a list of (name, fn) or (name, fn, head), fn(value, context) returning the
    replacement or None.

        logits = run_with_hooks(model, tokens, [("layers.1.self_attn.z", zero, 3)])
    """
    with Hooks(model) as hooks:
        for hook in fwd_hooks:
            name, fn, head = (tuple(hook) + (None,))[:3]
            hooks.add(name, fn, head=head)
        return model(input)
