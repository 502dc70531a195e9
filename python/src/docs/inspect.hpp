// The docstrings of inspect.cpp's bindings: Capture, Hooks, run_with_cache, patching,
// ablation, logit attribution, importance, pruning and mechanism scores. A head is a
// (layer, head) pair, layer indexing attention_layers(model) (model order); hook-point names
// are '<module path>.<point>' ('layers.0.self_attn.z').
#pragma once

namespace headgrad::python::docs {

// --- Capture, Hooks, caches ---------------------------------------------------------------------
constexpr const char* capture_init =
    R"doc(A capture of a model's hook points, recording while its with-block is open.

It records on the thread that opened the block.

Args:
    model (Module).
    points (list of str, optional): own point names ('pattern': that point of every module
        that has one) or full names ('layers.0.self_attn.pattern'); [] for every point.
        Default None: the attention layers' q, k, v, scores, pattern, z and result.
    retain_grads (bool): keep the recorded tensors' gradients after backward (grad()).
        Default True.)doc";

constexpr const char* capture_get =
    R"doc(The recorded values of one point, detached; cap[name] is the same.

A tensor on a GPU is copied to the CPU.

Args:
    name (str): a full name, e.g. 'layers.0.self_attn.pattern'.

Returns:
    numpy.ndarray: the point's shape, e.g. (N, H, L, S) for a pattern.)doc";

constexpr const char* capture_grad = R"doc(The gradient of a recorded point after backward.

Args:
    name (str): a full name.

Returns:
    numpy.ndarray of the point's shape; Error when it has none.)doc";

constexpr const char* capture_tensor =
    R"doc(The recorded tensor itself, part of the graph (differentiable).

Args:
    name (str): a full name.

Returns:
    Tensor of the point's shape.)doc";

constexpr const char* capture_names = R"doc(The full names recorded so far.

Returns:
    list of str, sorted.)doc";

constexpr const char* capture_layer_names = R"doc(The modules with a chosen point, in model order.

Returns:
    list of str, e.g. ['layers.0.self_attn', 'layers.1.self_attn'].)doc";

constexpr const char* capture_clear = R"doc(Drops every recorded tensor.

Returns:
    None.)doc";

constexpr const char* hook_context_name = R"doc(The point's full name, e.g. 'layers.0.self_attn.z'.

Returns:
    str.)doc";

constexpr const char* hook_context_module =
    R"doc(The path of the module owning the point ('' for the model).

Returns:
    str.)doc";

constexpr const char* hook_context_point = R"doc(The point's own name, e.g. 'z'.

Returns:
    str.)doc";

constexpr const char* hook_context_per_head =
    R"doc(Whether the point's tensor has a head axis at dim 1.

Returns:
    bool.)doc";

constexpr const char* hook_context_layer =
    R"doc(The point's index among the model's points of the same own name, in model order.

The attention layer for q .. result, the transformer layer for resid_pre .. resid_post, 0 for
embed, ln_final and logits.

Returns:
    int.)doc";

constexpr const char* hook_context_head = R"doc(The head of a head hook.

Returns:
    int: -1 for a hook on the whole tensor.)doc";

constexpr const char* hooks_init =
    R"doc(Hooks on a model's hook points, run while the with-block is open on this thread.

Args:
    model (Module).)doc";

constexpr const char* hooks_add =
    R"doc(Adds a hook at a point (hooks at one point run in the order added).

Args:
    name (str): a full name, e.g. 'layers.1.self_attn.z'; IndexError listing the names for
        an unknown one.
    hook (callable): hook(value, context) -> Tensor or None; value the point's tensor (with
        head: that head's slice, the head axis removed, e.g. (N, L, d) for z), context a
        HookContext; a returned Tensor of the same shape, dtype and device replaces it,
        None keeps it.
    head (int, optional): one head of a per-head point. Default None: the whole tensor.

Returns:
    None (a UserWarning, once, when added outside the with-block).)doc";

constexpr const char* hooks_clear = R"doc(Removes every hook.

Returns:
    None.)doc";

constexpr const char* hooks_names = R"doc(Every hook point of the model, in model order.

Returns:
    list of str: 'embed', 'layers.0.resid_pre', 'layers.0.self_attn.q', ....)doc";

constexpr const char* hooks_names_at = R"doc(The full names of the points with one own name.

Args:
    point (str): e.g. 'z'.

Returns:
    list of str in model order (one per module with that point; empty when none).)doc";

constexpr const char* hooks_point_names = R"doc(The distinct own names of the model's points.

Returns:
    list of str in model order: 'q', 'k', ..., 'logits'.)doc";

constexpr const char* cache_get = R"doc(The cached tensor of a point; cache[name] is the same.

Args:
    name (str): a full name.

Returns:
    Tensor of the point's shape; IndexError listing the cached names.)doc";

constexpr const char* cache_grad =
    R"doc(The gradient of a cached point after a backward from the run's output.

The cache must come from run_with_cache(..., with_grads=True).

Args:
    name (str): a full name.

Returns:
    Tensor of the point's shape; Error when it has none.)doc";

constexpr const char* cache_names = R"doc(The cached names.

Returns:
    list of str, sorted.)doc";

constexpr const char* cache_keys = R"doc(The cached names (as a dict's keys).

Returns:
    list of str, sorted.)doc";

constexpr const char* run_with_cache =
    R"doc(One run with every requested hook point cached (TransformerLens's run_with_cache).

Args:
    model (Module).
    input (Tensor or callable): the model's input (the run is GPT's forward or
        model(input)), or a function of no arguments returning the output.
    names (list of str, optional): the full names to cache. Default None: every point.
    with_grads (bool): keep the graph's own tensors so that cache.grad(name) reads their
        gradients after a backward from the output; else detached values. Default False.
    hooks (Hooks, optional): hooks active for the run (the cache records what they made).

Returns:
    tuple (output, cache): output the run's Tensor (the logits), cache an ActivationCache.)doc";

constexpr const char* ablate_heads =
    R"doc(Each head's point ablated in turn on `input`, the metric measured.

Args:
    model (Module).
    input (Tensor): e.g. tokens (N, T).
    reference (Tensor): examples for 'mean' (input's shape past the batch dimension) and
        'resample' (input's batch size).
    metric (LogitDifference or callable): metric(logits) -> 0-d Tensor.
    kind (str): 'zero' (the head's value set to 0), 'mean' (its mean over reference's
        examples, per position) or 'resample' (another example's, a seeded permutation of
        reference). Default 'zero'.
    point (str): a per-head point. Default 'z'.
    seed (int): for 'resample'. Default 0.
    run (callable, keyword, optional): run(input) -> logits; default GPT's forward, else
        model(input).

Returns:
    dict {'kind': str, 'point': str, 'baseline': float (the metric without ablation),
    'metric': PatchingGrid (layer, head) of the raw metric with each head ablated}.)doc";

// --- patching
// -------------------------------------------------------------------------------------
constexpr const char* logit_difference_init =
    R"doc(The metric: the mean logit difference between answer and wrong tokens.

metric(logits) = mean over n of logits[n, position[n], answer[n]] - logits[n, position[n],
wrong[n]], a 0-d Tensor.

Args:
    position (Tensor): (N) int64; negative counts from the end.
    answer (Tensor): (N) int64 token ids.
    wrong (Tensor): (N) int64 token ids.)doc";

constexpr const char* logit_difference =
    R"doc(The mean logit difference between answer and wrong tokens.

Args:
    logits (Tensor): (N, T, V).
    position (Tensor): (N) int64; negative counts from the end.
    answer (Tensor): (N) int64, in [0, V).
    wrong (Tensor): (N) int64, in [0, V).

Returns:
    Tensor, 0-d, differentiable: mean over n of logits[n, position[n], answer[n]] -
    logits[n, position[n], wrong[n]].)doc";

constexpr const char* grid_point = R"doc(The hook point patched ('z', 'resid_pre', ...).

Returns:
    str.)doc";

constexpr const char* grid_rows = R"doc(The module of each row (layer).

Returns:
    list of str, e.g. ['layers.0.self_attn', 'layers.1.self_attn'].)doc";

constexpr const char* grid_dims = R"doc(The name of each dimension.

Returns:
    list of str: 'layer', then 'head' and/or 'position'.)doc";

constexpr const char* grid_shape = R"doc(The grid's shape.

Returns:
    tuple of int: (layers,), (layers, heads), (layers, positions) or (layers, heads,
    positions).)doc";

constexpr const char* grid_numpy = R"doc(The values as an array (as .values).

Returns:
    numpy.ndarray, float64, of shape `shape`.)doc";

constexpr const char* grid_at = R"doc(One value.

Args:
    i (int): the row (layer), from 0.
    j (int): the second index (head or position), from 0; unused by a 1-d grid. Default -1.
    k (int): the third index (position), from 0; unused below 3-d. Default -1.

Returns:
    float.)doc";

constexpr const char* grid_tensor = R"doc(The values as a tensor.

Returns:
    Tensor, float64, of shape `shape`.)doc";

constexpr const char* patching_init =
    R"doc(Activation patching between a clean and a corrupted input.

Runs each input once (no grad, in the model's current mode: call eval() first), caching
every hook point.

Args:
    model (Module).
    clean (Tensor): the clean input, e.g. tokens (N, T).
    corrupted (Tensor): the corrupted input, of clean's shape.
    metric (LogitDifference or callable): metric(logits) -> 0-d Tensor.
    run (callable, keyword, optional): run(input) -> logits; default GPT's forward, else
        model(input).

Raises ValueError when the two metrics are (nearly) equal: nothing to restore.)doc";

constexpr const char* patching_clean_metric = R"doc(The metric of the clean run.

Returns:
    float.)doc";

constexpr const char* patching_corrupted_metric = R"doc(The metric of the corrupted run.

Returns:
    float.)doc";

constexpr const char* patching_clean_cache = R"doc(Every hook point of the clean run.

Returns:
    ActivationCache.)doc";

constexpr const char* patching_corrupted_cache = R"doc(Every hook point of the corrupted run.

Returns:
    ActivationCache.)doc";

constexpr const char* patching_normalise =
    R"doc(A metric normalised: 1 restores the clean behaviour, 0 does nothing.

(metric - corrupted_metric) / (clean_metric - corrupted_metric).

Args:
    metric (float).

Returns:
    float.)doc";

constexpr const char* patching_patch =
    R"doc(The corrupted run with some activations set to their clean values.

Args:
    patches: a name, a (name, head) or (name, head, position) tuple (None for the whole
        axis), or a list of them.

Returns:
    float: the normalised metric.)doc";

constexpr const char* patching_by_layer = R"doc(Each layer's point patched in turn (whole tensor).

Args:
    point (str): an own point name. Default 'resid_pre'.

Returns:
    PatchingGrid (layer): normalised metrics.)doc";

constexpr const char* patching_by_head =
    R"doc(Each head's slice of a per-head point patched in turn.

TransformerLens's get_act_patch_attn_head_out_all_pos for 'z'.

Args:
    point (str): a per-head point ('q', 'k', 'v', 'scores', 'pattern', 'z', 'result').
        Default 'z'.

Returns:
    PatchingGrid (layer, head): normalised metrics.)doc";

constexpr const char* patching_by_head_position =
    R"doc(Each head at each position patched in turn (query positions; key positions for k and v).

Args:
    point (str): a per-head point. Default 'z'.

Returns:
    PatchingGrid (layer, head, position): normalised metrics.)doc";

constexpr const char* patching_by_position =
    R"doc(Each layer's point at each position patched in turn (dim 1 of a residual point).

Args:
    point (str): an own point name. Default 'resid_pre'.

Returns:
    PatchingGrid (layer, position): normalised metrics.)doc";

constexpr const char* patching_attribution_by_head =
    R"doc(Attribution patching per head (Nanda 2023): by_head's first-order estimate.

The sum of (clean - corrupted) * d metric / d activation over each head's slice, from one
forward and one backward of the corrupted run.

Args:
    point (str): a per-head point. Default 'z'.

Returns:
    PatchingGrid (layer, head): normalised estimates.)doc";

constexpr const char* patching_attribution_by_head_position =
    R"doc(Attribution patching per head and position: by_head_position's first-order estimate.

Args:
    point (str): a per-head point. Default 'z'.

Returns:
    PatchingGrid (layer, head, position): normalised estimates.)doc";

constexpr const char* patching_path_patch =
    R"doc(Path patching (Wang et al. 2022) from one sender head to one receiver head.

The sender head's clean result reaches the receiver head's `via` input only; every other
head's z and every MLP's output are frozen to the corrupted run.

Args:
    sender (tuple): (layer, head), before the receiver's layer.
    receiver (tuple): (layer, head).
    via (str): 'q', 'k' or 'v'. Default 'q'.

Returns:
    float: the normalised metric.)doc";

constexpr const char* patching_path_patching =
    R"doc(path_patch from every sender head to one receiver.

Args:
    receiver (tuple): (layer, head).
    via (str): 'q', 'k' or 'v'. Default 'q'.

Returns:
    PatchingGrid (layer, head): normalised metrics; NaN from the receiver's layer on.)doc";

constexpr const char* patching_fewest_heads_restoring =
    R"doc(The fewest heads whose joint z patching restores at least `fraction`.

Heads are added greedily, by their single-head z patching effect, largest first.

Args:
    fraction (float): default 0.9.

Returns:
    dict {'heads': list of (layer, head) tuples, 'restored': float (the normalised metric
    they reach; every head when no smaller set does)}.)doc";

// --- attribution, importance, pruning, mechanisms ------------------------------------------------
constexpr const char* head_grad_norms = R"doc(Per-head gradient norms left by the last backward.

Args:
    model (Module).
    capture (Capture, optional): holding '<layer>.z' with its gradient, for 'z'. Default
        None.

Returns:
    list of dict, one per head, layer-major: {'layer': int, 'head': int, 'w_q', 'w_k',
    'w_v': float (the L2 norm of the head's rows of the projection's gradient), 'w_o':
    float (its columns of out_proj.weight's), 'z': float or None (||dL/dz_h||, None
    without a captured z gradient)}.)doc";

constexpr const char* head_importance_class =
    R"doc(Head importance scores (Michel et al. 2019): head_importance's result.)doc";

constexpr const char* head_importance_layers = R"doc(The attention layers' names.

Returns:
    list of str.)doc";

constexpr const char* head_importance_raw =
    R"doc(The mean |dL(x)/d gate| of each head over the examples.

Returns:
    list (per layer) of list (per head) of float.)doc";

constexpr const char* head_importance_normalized =
    R"doc(Each layer's raw scores divided by their L2 norm.

Returns:
    list (per layer) of list (per head) of float.)doc";

constexpr const char* head_importance_examples =
    R"doc(The examples scored (with at least one scored target).

Returns:
    int.)doc";

constexpr const char* head_importance =
    R"doc(Every head's importance (Michel, Levy and Neubig 2019).

The mean over examples of |dL(x)/dxi_h| for a gate xi_h on each head's output, over batches
0 .. batches-1 of a split (eval mode; modes, gates and gradients are restored). Runs without
the GIL.

Args:
    model (Module).
    task (Task).
    split (str): default 'validation'.
    batches (int): default 4.
    batch_size (int): default 64.
    forward (callable, optional): forward(batch) -> logits; default the model's own.

Returns:
    HeadImportance.)doc";

constexpr const char* importance_order =
    R"doc(Every head, least important first (ties: model order).

Args:
    importance (HeadImportance).
    ranking (str): 'normalized', 'raw', or 'automatic' (normalized when every layer has two
        or more heads, else raw). Default 'automatic'.

Returns:
    list of (layer, head) tuples.)doc";

constexpr const char* random_order = R"doc(Every head of a model in a random order.

Args:
    model (Module).
    seed (int).

Returns:
    list of (layer, head) tuples.)doc";

constexpr const char* greedy_order =
    R"doc(The greedy ablation order of every head.

Repeatedly the head whose ablation, with those removed before it, gives the lowest evaluate
loss (n (n + 1) / 2 evaluations for n heads). Runs without the GIL.

Args:
    model (Module).
    task (Task).
    split (str): default 'validation'.
    batches (int): default 4.
    batch_size (int): default 64.
    forward (callable, optional): forward(batch) -> logits; default the model's own.

Returns:
    list of (layer, head) tuples, first removed first.)doc";

constexpr const char* pruning_curve =
    R"doc(Loss and accuracy with the first k heads of an order ablated, k = 0 .. len(order).

Runs without the GIL.

Args:
    model (Module).
    task (Task).
    order (list of (layer, head)).
    split (str): default 'validation'.
    batches (int): default 4.
    batch_size (int): default 64.
    forward (callable, optional): forward(batch) -> logits; default the model's own.

Returns:
    list of dict {'removed': int (k), 'loss': float, 'accuracy': float}, len(order) + 1
    entries.)doc";

constexpr const char* random_pruning_band =
    R"doc(The pruning curves of `orders` random orders: their mean and central band.

Order i is random_order(model, seed + i); every set of removed heads is evaluated once. Runs
without the GIL.

Args:
    model (Module).
    task (Task).
    orders (int): >= 1.
    seed (int): default 0.
    coverage (float): the central band's share, in (0, 1]. Default 0.95.
    split (str): default 'validation'.
    batches (int): default 4.
    batch_size (int): default 64.
    forward (callable, optional): forward(batch) -> logits; default the model's own.

Returns:
    dict {'removed': list of int (0 .. n), 'mean_accuracy', 'low_accuracy',
    'high_accuracy', 'mean_loss', 'low_loss', 'high_loss': list of float (one per entry of
    removed; low and high the (1 - coverage) / 2 and (1 + coverage) / 2 quantiles),
    'orders': int, 'evaluations': int (distinct sets evaluated)}.)doc";

constexpr const char* head_parameter_counts =
    R"doc(The number of parameters of each head.

A head holds its rows of W_q, W_k, W_v and their biases, its part of bias_k and bias_v, and
its columns of out_proj.weight.

Args:
    model (Module).

Returns:
    list of int, one per head, layer-major (random_order's head order).)doc";

constexpr const char* attention_parameter_count =
    R"doc(The number of parameters of every attention layer, out_proj.bias included.

The sum of head_parameter_counts plus each layer's out_proj.bias.

Args:
    model (Module).

Returns:
    int.)doc";

constexpr const char* head_ablation_init =
    R"doc(A with-block that sets the gates of some heads to 0 (the rest 1).

The layers' gates are restored when it ends.

Args:
    model (Module).
    heads (list of (layer, head)).)doc";

constexpr const char* mechanism_layers =
    R"doc(The layers' names: attention layer paths, or '0', '1', ... from patterns.

Returns:
    list of str.)doc";

constexpr const char* mechanism_previous_token =
    R"doc(Previous-token scores: the mean attention from query i to key i - 1.

Returns:
    list (per layer) of list (per head) of float; NaN when nothing was counted.)doc";

constexpr const char* mechanism_induction =
    R"doc(Induction scores: attention to the position after an earlier copy of the query's token.

Averaged over the queries whose token occurred before.

Returns:
    list (per layer) of list (per head) of float; NaN when nothing was counted.)doc";

constexpr const char* mechanism_induction_scored =
    R"doc(Induction scores over the queries whose prediction the task scores only.

Returns:
    list (per layer) of list (per head) of float; NaN when nothing was counted.)doc";

constexpr const char* mechanism_positions_previous =
    R"doc(The (example, query) pairs counted for previous_token.

Returns:
    int.)doc";

constexpr const char* mechanism_positions_induction =
    R"doc(The (example, query) pairs counted for induction.

Returns:
    int.)doc";

constexpr const char* mechanism_positions_induction_scored =
    R"doc(The (example, query) pairs counted for induction_scored.

Returns:
    int.)doc";

constexpr const char* mechanism_scores =
    R"doc(Previous-token and induction scores of every head (Olsson et al. 2022).

From the patterns of batches 0 .. batches-1 of a split (eval mode, no graph). Runs without
the GIL.

Args:
    model (Module).
    task (Task): a token task (a batch without tokens gives NaN scores).
    split (str): default 'validation'.
    batches (int): default 4.
    batch_size (int): default 64.
    forward (callable, optional): forward(batch) -> logits; default the model's own.

Returns:
    MechanismScores.)doc";

constexpr const char* mechanism_scores_of_patterns =
    R"doc(Previous-token and induction scores from patterns already captured.

The patterns come from a Capture of 'pattern'.

Args:
    patterns (list of Tensor): one (N, H, L, S) pattern per layer, S >= L.
    tokens (Tensor): (N, L) int64.
    key_padding_mask (Tensor, optional): (N, L) bool, True = padding. Default None.
    scored (Tensor, optional): (N, L) bool, True = the position's prediction is scored.
        Default None: every position.

Returns:
    MechanismScores (layers named '0', '1', ...).)doc";

constexpr const char* direct_logit_attribution =
    R"doc(Each residual component's direct contribution to the mean logit difference.

The logit difference is logits[n, position[n], answer[n]] - logits[n, position[n],
wrong[n]] of a pre-norm GPT, with the final norm's scale frozen (TransformerLens's
logit_attrs). The model runs in its current mode (call eval()).

Args:
    model (GPT): norm_first (ValueError for a post-norm model).
    input (Tensor): tokens (N, T) (or the model's float input).
    position (Tensor): (N) int64.
    answer (Tensor): (N) int64 token ids in [0, V).
    wrong (Tensor): (N) int64 token ids in [0, V).

Returns:
    dict {'labels': list of str ('embed', then per layer l 'layers.l.self_attn.head<h>'
    for each head, 'layers.l.self_attn.bias', 'layers.l.mlp', then 'norm.bias'), 'values':
    list of float (one per label: the mean over the N examples, in float64), 'heads': list
    per layer of a list per head of float (the heads' values again), 'logit_difference':
    float (the model's own mean), 'sum': float (the sum of values, logit_difference up to
    rounding)}.)doc";

constexpr const char* logit_lens =
    R"doc(The logit lens: the residual stream after each layer, decoded into logits.

The stream after the embedding and after each layer goes through the final norm (when the
model has one) and lm_head.

Args:
    model (GPT).
    input (Tensor): tokens (N, T) (or the model's float input).

Returns:
    dict {stage: Tensor}: keys in order 'embed', 'layers.0', ..., 'layers.<L-1>'; each value
    the logits (N, T, V) of that stage, in the model's dtype; the last equals the model's
    output.)doc";

// --- head points, attention layers, recall prompts ----------------------------------------
constexpr const char* head_points =
    R"doc(The own names of the attention layers' per-head hook points.

Returns:
    list of str: ['q', 'k', 'v', 'scores', 'pattern', 'z', 'result'].)doc";

constexpr const char* attention_layers =
    R"doc(Every attention layer of a model, itself included, in model order.

Args:
    model (Module).

Returns:
    list of (str, AttentionLayer) tuples: the layer's dotted path ('' for the model itself)
    and the layer.)doc";

constexpr const char* corrupt_recall =
    R"doc(Clean and corrupted prompts of a recall task, for patching.

For associative_recall and mqar. 'query' replaces the query's key by another key of the
prompt whose value differs; 'context' keeps the query and swaps those two keys' places in the
context, so layer-0 outputs differ too.

Args:
    task (Task): associative_recall or mqar (ValueError otherwise).
    batch (Batch): one of the task's batches, with tokens and targets.
    corruption (str): 'query' or 'context'. Default 'query'.

Returns:
    dict {'clean': Tensor (N, T) int64, 'corrupted': Tensor (N, T) int64,
    'key_padding_mask': Tensor (N, T) bool or None, 'position', 'answer', 'wrong':
    Tensor (N) int64, 'kept': Tensor (N) int64 (each prompt's row in batch), 'dropped': int
    (prompts left out: no key with another value)}.)doc";

constexpr const char* corrupt_recall_query = R"doc(corrupt_recall(task, batch, 'query').

Args:
    task (Task): associative_recall or mqar.
    batch (Batch): one of the task's batches.

Returns:
    dict: corrupt_recall's.)doc";

}  // namespace headgrad::python::docs
