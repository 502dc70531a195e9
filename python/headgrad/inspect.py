"""headgrad.inspect: per-head captures, hook points, patching, ablation and attribution.

    with headgrad.inspect.Capture(model, ["pattern"]) as cap:
        model(tokens)
    cap["layers.0.self_attn.pattern"]          # NumPy (N, H, L, S)

    with headgrad.inspect.Hooks(model) as hooks:
        hooks.add("layers.1.self_attn.z", lambda z, ctx: z * 0, head=3)
        logits = model(tokens)                 # head 3 of layer 1 zero-ablated

Hooks, Capture and run_with_cache are one mechanism: handlers at the hook points that
modules declare (headgrad.nn.HookPoint; a module written in Python declares its own with
self.hook_x = HookPoint()). Names follow the module paths ("layers.0.self_attn.z");
TransformerLens's "blocks.0.attn.hook_z" is the same place (docs/inspect.md has the table).

AttentionView writes the interactive view of every head's pattern (one HTML file that opens
offline; shown inline in Jupyter), and a Capture holding patterns shows itself the same way.
"""
import html as _html

import numpy as _np

from ._grad_mode import no_grad as _no_grad

from ._headgrad.inspect import attention_view_html as _view_html
from ._headgrad.inspect import attention_view_labels as _view_labels
from ._headgrad.inspect import write_attention_view as _write_view
from ._headgrad.inspect import (  # noqa: F401
    ActivationCache, Capture, HeadAblation, HeadImportance, HookContext, Hooks, LogitDifference,
    MechanismScores, Patching, PatchingGrid, ablate_heads, attention_layers,
    attention_parameter_count, corrupt_recall, corrupt_recall_query, direct_logit_attribution,
    greedy_order, head_grad_norms, head_importance, head_parameter_counts, head_points,
    importance_order, logit_difference, logit_lens, mechanism_scores,
    mechanism_scores_of_patterns, pruning_curve, random_order, random_pruning_band, run_with_cache,
)


def run_with_hooks(model, input, fwd_hooks=()):
    """model(input) with hooks for this one run (TransformerLens's run_with_hooks).

        logits = run_with_hooks(model, tokens, [("layers.1.self_attn.z", zero, 3)])

    Args:
        model (Module): called as model(input).
        input (Tensor): e.g. tokens (N, T).
        fwd_hooks (sequence): (name, fn) or (name, fn, head) entries, as Hooks.add takes
            them: fn(value, context) returns the replacement or None. Default ().

    Returns:
        model(input)'s result (the logits Tensor for the built-in models).
    """
    with Hooks(model) as hooks:
        for hook in fwd_hooks:
            name, fn, head = (tuple(hook) + (None,))[:3]
            hooks.add(name, fn, head=head)
        return model(input)


class AttentionView:
    """The interactive attention view: every head's pattern, a layer x head grid per model,
    two models side by side on the same tokens, hover to follow a token (docs/inspect.md).
    One self-contained HTML file: save() writes it, and Jupyter shows it inline.

        view = hg.inspect.AttentionView("recall: H = 1 against H = 8")
        view.add("H = 1", model_1, tokens, task=task)     # tokens (N, T); task names them
        view.add("H = 8", model_8, tokens, task=task)
        view.save("view.html")
        view                                              # in a notebook: the view

    Models added to one `group` share its examples (the same tokens); a second group (another
    task, another prompt set) gets its own entry in the page's task picker.
    """

    def __init__(self, title="headgrad: attention patterns", note=""):
        """An empty view.

        Args:
            title (str): the page's title. Default "headgrad: attention patterns".
            note (str): a line of text under the title. Default "".
        """
        self.title, self.note = title, note
        self._groups = {}  # name -> {"name", "examples", "models", ...}, in insertion order

    def add(self, name, model, tokens, *, key_padding_mask=None, labels=None, task=None,
            group="examples", scores=None, forward=None):
        """Runs `model` on `tokens` (eval mode, no grad; its mode is restored) while capturing
        every attention layer's pattern, and adds it. `forward(model, tokens)` replaces
        model(tokens[, key_padding_mask]) for models with another signature. labels: one list
        per example of strings or (text, role) pairs; else task.token_labels; else the ids.
        scores: {key: (layers, heads) values} shown under each head.

        Args:
            name (str): the model's name in the view.
            model (Module): run in eval mode without grad.
            tokens (Tensor): (N, T) token ids.
            key_padding_mask (Tensor, keyword, optional): (N, T) bool, passed to the model.
            labels (list, keyword, optional): N lists of T labels.
            task (Task, keyword, optional): names the tokens when labels is None.
            group (str, keyword): models of one group share its examples. Default "examples".
            scores (dict, keyword, optional): {str: (layers, heads) numbers}.
            forward (callable, keyword, optional): forward(model, tokens) runs the model.

        Returns:
            AttentionView: this view.
        """
        with Capture(model, ["pattern"], False) as cap:
            was_training = model.training
            model.eval()
            try:
                with _no_grad():
                    if forward is not None:
                        forward(model, tokens)
                    elif key_padding_mask is not None:
                        model(tokens, key_padding_mask)
                    else:
                        model(tokens)
            finally:
                model.train(was_training)
        layers = [n for n in cap.layer_names() if n + ".pattern" in cap.names()]
        if not layers:
            raise ValueError(f"AttentionView.add: model '{name}' ran no attention layer")
        patterns = _np.stack([cap[n + ".pattern"] for n in layers], axis=1)  # (N, L, H, T, S)
        rows = tokens.tolist() if hasattr(tokens, "tolist") else [list(r) for r in tokens]
        if labels is None:
            labels = ([task.token_labels(r) for r in rows] if task is not None
                      else [[str(t) for t in r] for r in rows])
        self.add_patterns(name, patterns, labels, group=group, scores=scores)
        return self

    def add_patterns(self, name, patterns, labels, *, group="examples", scores=None):
        """Adds patterns already captured: an (examples, layers, heads, T, T) array (rows sum
        to 1), with one list of T labels per example.

        Args:
            name (str): the model's name in the view.
            patterns (array-like): (examples, layers, heads, T, T).
            labels (list): one list of T labels (str or (text, role)) per example.
            group (str, keyword): default "examples".
            scores (dict, keyword, optional): {str: (layers, heads) numbers}.

        Returns:
            AttentionView: this view.
        """
        patterns = _np.ascontiguousarray(patterns, dtype=_np.float32)
        if patterns.ndim != 5 or patterns.shape[3] != patterns.shape[4]:
            raise ValueError(f"AttentionView: model '{name}': patterns of shape {patterns.shape}; "
                             "(examples, layers, heads, T, T) expected (self-attention)")
        if patterns.shape[0] == 0:
            raise ValueError(f"AttentionView: model '{name}': patterns hold no example")
        # Everything is checked before the view changes: a failed add leaves it as it was.
        g = self._groups.get(group)
        if g is None:  # the group's labels, checked here rather than when the page is written
            examples = _view_labels(labels, patterns.shape[0], patterns.shape[3],
                                    f"AttentionView: model '{name}', group '{group}'")
        else:
            examples = g["examples"]
        if len(examples) != patterns.shape[0] or len(examples[0]) != patterns.shape[3]:
            raise ValueError(
                f"AttentionView: model '{name}' has {patterns.shape[0]} examples of "
                f"{patterns.shape[3]} tokens; group '{group}' holds {len(examples)} of "
                f"{len(examples[0])} (add it to another group)")
        table = _score_table(name, scores, patterns.shape[1:3])
        if g is None:
            g = self._groups[group] = {"name": group, "examples": examples, "models": []}
        g["models"].append({"name": name, "patterns": patterns, "scores": table})
        return self

    def _group_list(self):
        return [dict(g, model_a=0, model_b=len(g["models"]) - 1) for g in self._groups.values()]

    def html(self):
        """The page, as one string.

        Returns:
            str: a self-contained HTML document.
        """
        return _view_html(self.title, self.note, self._group_list())

    def save(self, path):
        """Writes the page to `path` (atomically; opens offline in any browser).

        Args:
            path (str or os.PathLike).

        Returns:
            path, as given.
        """
        _write_view(str(path), self.title, self.note, self._group_list())
        return path

    def _repr_html_(self):
        # An iframe keeps the page's script and style apart from the notebook's.
        return ('<iframe style="width:100%;height:900px;border:0" srcdoc="'
                + _html.escape(self.html(), quote=True) + '"></iframe>')


def _score_table(name, scores, layers_heads):
    """The view's per-head scores as (key, label, [[value per head] per layer]), checked: str
    keys, numbers, one per (layer, head) of the model."""
    if scores is not None and not hasattr(scores, "items"):
        raise TypeError(f"AttentionView: model '{name}': scores is a dict {{key: (layers, heads) "
                        f"values}}, got {type(scores).__name__}")
    table = []
    for key, values in (scores or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"AttentionView: model '{name}': score keys are str, got {key!r}")
        try:
            array = _np.asarray(values, dtype=float)
        except (TypeError, ValueError) as e:
            raise ValueError(f"AttentionView: model '{name}': score '{key}' is not numeric "
                             f"({e})") from None
        if array.shape != tuple(layers_heads):
            raise ValueError(f"AttentionView: model '{name}': score '{key}' has shape "
                             f"{array.shape}; one value per (layer, head) is "
                             f"{tuple(layers_heads)}")
        table.append((key, key.replace("_", "-"), array.tolist()))
    return table


def _capture_view(cap):
    """The AttentionView of a Capture's square patterns (tokens named by position)."""
    layers = [n for n in cap.layer_names() if n + ".pattern" in cap.names()]
    patterns = [cap[n + ".pattern"] for n in layers]
    if not patterns or any(p.shape != patterns[0].shape or p.shape[2] != p.shape[3]
                           for p in patterns):
        return None
    stacked = _np.stack(patterns, axis=1)
    labels = [[str(i) for i in range(stacked.shape[3])] for _ in range(stacked.shape[0])]
    return AttentionView("Captured attention patterns").add_patterns(
        " / ".join(layers) if len(layers) < 3 else f"{len(layers)} layers", stacked, labels)


def _capture_repr_html(cap):
    view = _capture_view(cap)
    return None if view is None else view._repr_html_()


Capture._repr_html_ = _capture_repr_html
