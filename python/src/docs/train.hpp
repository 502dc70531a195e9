// The docstrings of train.cpp's bindings: Batch, Task, make_task, the loss and evaluation, the
// Trainer, save and load. B batch size, T the task's max_len, V its vocab_size.
#pragma once

namespace headgrad::python::docs {

constexpr const char* batch_init = R"doc(A batch built by hand (every field optional, keyword only).

Args:
    tokens (Tensor, optional): (B, T) int64 ids.
    targets (Tensor, optional): (B, T) int64 next-token ids, -100 where not scored
        (sequence tasks); (B) int64 labels (classification); (B, T, F_out) float32
        (regression).
    key_padding_mask (Tensor, optional): (B, T) bool, True = padding.
    features (Tensor, optional): (B, F) float32 tabular features.
    inputs (Tensor, optional): (B, T, F_in) float32 continuous tokens (regression).
    target_mask (Tensor, optional): (B, T) bool, True = scored (regression).)doc";

constexpr const char* batch_tokens = R"doc(The input ids (0 = padding where lengths vary).

Returns:
    Tensor (B, T) int64, or None (regression tasks).)doc";

constexpr const char* batch_targets = R"doc(What the model should predict.

Returns:
    Tensor: (B, T) int64 next-token ids, -100 where not scored (sequence tasks); (B) int64
    labels (classification); (B, T, F_out) float32 (regression); or None.)doc";

constexpr const char* batch_key_padding_mask = R"doc(Which positions are padding.

Returns:
    Tensor (B, T) bool, True = padding; None when every example has length T.)doc";

constexpr const char* batch_features = R"doc(The tabular features (the fusion task).

Returns:
    Tensor (B, F) float32, or None.)doc";

constexpr const char* batch_inputs = R"doc(The continuous input tokens (regression tasks).

Returns:
    Tensor (B, T, F_in) float32, or None.)doc";

constexpr const char* batch_target_mask = R"doc(Which positions are scored (regression tasks).

Returns:
    Tensor (B, T) bool, True = scored; None: every position.)doc";

constexpr const char* batch_to =
    R"doc(The batch on a device (the Trainer does this for every batch).

Args:
    device (Device or str): 'cpu', 'cuda', 'cuda:N'.

Returns:
    Batch with every tensor on that device (the same tensors where they are there already);
    None fields stay None.)doc";

constexpr const char* task_name = R"doc(The task's name, one of task_names().

Returns:
    str.)doc";

constexpr const char* task_kind = R"doc(How the task is scored.

Returns:
    str: 'sequence', 'classification' or 'regression'.)doc";

constexpr const char* task_vocab_size =
    R"doc(The model's output width: the number of token ids, or F_out for regression tasks.

Returns:
    int.)doc";

constexpr const char* task_max_len = R"doc(T, the length of every batch's sequences.

Returns:
    int.)doc";

constexpr const char* task_num_classes = R"doc(C, the number of classes (classification tasks).

Returns:
    int: 0 for other tasks.)doc";

constexpr const char* task_num_features = R"doc(F, the number of tabular features (the fusion task).

Returns:
    int: 0 for other tasks.)doc";

constexpr const char* task_input_dim =
    R"doc(F_in, the width of a continuous input token (regression tasks).

Returns:
    int: 0 when the inputs are token ids.)doc";

constexpr const char* task_batch =
    R"doc(Batch number `index` of a split, built on the CPU.

A pure function of (the task's options, split, index, batch_size).

Args:
    split (str): 'train', 'validation' or 'test' (test needs test_fraction > 0).
    index (int): >= 0.
    batch_size (int): B >= 1.

Returns:
    Batch.)doc";

constexpr const char* task_baselines =
    R"doc(Reference predictors scored on the batches evaluate sees.

'chance' (sequence, classification), 'key_agnostic' (associative_recall, mqar),
'predict_zero' (regression), on batches 0 .. batches-1 of a split.

Args:
    split (str): 'train', 'validation' or 'test'.
    batches (int).
    batch_size (int).

Returns:
    list of dict {'name': str, 'description': str, 'loss': float, 'accuracy': float,
    'exact_loss': float, 'exact_accuracy': float (the exact expectations, NaN where not
    derived)}.)doc";

constexpr const char* task_token_labels =
    R"doc(A name and a role for each token of one example, for viewers.

Args:
    tokens (list of int): one example's ids, padding included.

Returns:
    list of (text, role) tuples of str, one per token: keys 'K3', values 'V7', the query
    '?K3', letters, numbers, 'SEP', 'PAD'; roles key, value, query, filler, sep, pad or
    symbol. Empty for regression tasks.)doc";

constexpr const char* make_task =
    R"doc(A synthetic task by name (headgrad/train/tasks.hpp describes each).

Args:
    name (str): one of task_names().
    seed (int, keyword): default 0.
    length (int, keyword): the longest example (symbols, pairs, letters, points). Default 8.
    min_length (int, keyword): the shortest; 0: the task's default. Default 0.
    alphabet (int, keyword): symbols; 0: the task's default. Default 0.
    validation_fraction (float, keyword): held out for validation, in (0, 1). Default 0.3.
    test_fraction (float, keyword): held out for a test split; 0: none. Default 0.0.
    modulus (int, keyword): modular_addition's p. Default 31.
    num_features (int, keyword): fusion's F. Default 4.
    context (int, keyword): mqar's sequence length; 0: 4 * length. Default 0.
    dim (int, keyword): nearest_neighbour's / d_retrieval's dimension; 0: the default.
        Default 0.
    corpus (str, keyword): char_lm's text file or folder; '': the default corpus.

Returns:
    Task; ValueError for an unknown name or an option the task cannot use.)doc";

constexpr const char* induction_probe =
    R"doc(Olsson et al.'s induction probe: random sequences, each repeated once.

Rows of `half` distinct random symbols, each row repeated; a pure function of its
arguments.

Args:
    task (Task): a token task (its vocabulary).
    half (int): in [1, vocab_size - 2].
    batch_size (int): B.
    seed (int): default 0.

Returns:
    Batch: tokens (B, 2 * half) int64; targets (B, 2 * half) int64, the next token at
    positions half .. 2 * half - 2 and -100 elsewhere.)doc";

constexpr const char* task_names = R"doc(The tasks make_task knows.

Returns:
    list of str: 'copy', 'reverse', 'sort', 'associative_recall', 'modular_addition',
    'mqar', 'char_lm', 'char_classification', 'fusion', 'nearest_neighbour',
    'd_retrieval'.)doc";

constexpr const char* task_loss = R"doc(The training loss of logits against a batch, differentiable.

Args:
    logits (Tensor): (B, T, V) (sequence), (B, C) (classification) or (B, T, F_out)
        (regression).
    batch (Batch).
    kind (str): 'sequence', 'classification' or 'regression'. Default 'sequence'.

Returns:
    Tensor, 0-d: cross-entropy averaged over the scored targets (not -100); for regression
    the squared error summed over F_out, averaged over the scored positions.)doc";

constexpr const char* evaluate_logits =
    R"doc(Loss and accuracy of logits against a batch (no graph).

Args:
    logits (Tensor): (B, T, V), (B, C) or (B, T, F_out), as task_loss.
    batch (Batch).
    kind (str): 'sequence', 'classification' or 'regression'. Default 'sequence'.

Returns:
    dict {'step': int, 'loss': float, 'accuracy': float (correct / scored), 'correct': int
    (scored targets predicted exactly), 'scored': int}; step is 0. A regression position is
    correct when its squared error, summed over F_out, is below 0.1.)doc";

constexpr const char* evaluate =
    R"doc(Mean loss and accuracy of a model over batches 0 .. batches-1 of a split.

Eval mode, no graph; the training mode is restored. Runs without the GIL.

Args:
    model (Module): GPT, EncoderClassifier, FusionClassifier, or any model with forward=.
    task (Task).
    split (str): 'train', 'validation' or 'test'. Default 'validation'.
    batches (int): default 8.
    batch_size (int): default 64.
    forward (callable, optional): forward(batch) -> logits; default the model's own
        forward on the batch's fields.

Returns:
    dict {'step': int, 'loss': float, 'accuracy': float (correct / scored), 'correct': int
    (scored targets predicted exactly), 'scored': int}; the loss is averaged over every
    scored target; step is 0.)doc";

constexpr const char* trainer =
    R"doc(The training loop (train::Trainer).

Batches from a task, the loss, backward, clipping, the optimizer step and LR schedule,
evaluation, metrics files, checkpoints and bitwise resumption.)doc";

constexpr const char* trainer_init = R"doc(A trainer for a model on a task.

Args:
    model (Module): on the device it trains on.
    task (Task).
    optimizer (Optimizer): over the model's parameters.
    steps (int, keyword): default 1000.
    batch_size (int, keyword): default 64.
    eval_every (int, keyword): steps between evaluations; 0: at the end only. Default 100.
    eval_batches (int, keyword): validation batches per evaluation. Default 8.
    checkpoint_every (int, keyword): 0: at the end only (with out_dir). Default 0.
    log_every (int, keyword): plain progress lines' interval; 0: eval_every. Default 0.
    clip_grad_norm (float, keyword): 0: no clipping. Default 0.0.
    out_dir (str, keyword): metrics.csv, metrics.jsonl and checkpoint.npz; '': no files.
    device (Device or str, keyword, optional): default the model's device.
    resume (bool, keyword): continue from out_dir/checkpoint.npz. Default False.
    progress (bool, keyword): a progress bar on stderr. Default True.
    schedule (LRSchedule, keyword, optional): sets the lr before every step.
    forward (callable, keyword, optional): forward(batch) -> logits; default the model's
        own (GPT, EncoderClassifier, FusionClassifier).
    on_evaluate (callable, keyword, optional): on_evaluate(train, validation) after each
        evaluation, both metrics dicts.
    after_backward (callable, keyword, optional): after_backward(step) after each
        backward, before clipping and the step (step counts from 1).)doc";

constexpr const char* trainer_fit =
    R"doc(Trains the model (without the GIL: other Python threads run meanwhile).

Ctrl-C stops it after the current step, evaluates, writes the checkpoint (with out_dir) and
raises KeyboardInterrupt.

Returns:
    dict {'steps_done': int, 'resumed_from': int (0 when fresh), 'stopped_early': bool,
    'overridden': list of str (settings that differ from a resumed checkpoint's),
    'train': metrics dict, 'validation': metrics dict, 'seconds': float}.)doc";

constexpr const char* trainer_evaluate =
    R"doc(Mean loss and accuracy over eval_batches validation batches.

Eval mode, no graph; the mode is restored. Runs without the GIL.

Returns:
    dict {'step': int, 'loss': float, 'accuracy': float (correct / scored), 'correct': int
    (scored targets predicted exactly), 'scored': int}; step is 0.)doc";

constexpr const char* trainer_device = R"doc(The device the trainer runs on.

Returns:
    headgrad.Device.)doc";

constexpr const char* save =
    R"doc(Writes a module's state dict to an .npz file, atomically.

NumPy reads it (and torch's load_state_dict through it); the archive's comment records the
attention layout.

Args:
    module (Module).
    path (str).

Returns:
    None.)doc";

constexpr const char* load =
    R"doc(Reads an .npz file written by save (or a trainer checkpoint) into a module.

Every entry is checked first (names, shapes, finite values); on any problem nothing changes
(IOError for the file, ValueError naming the entries).

Args:
    module (Module).
    path (str).
    warn_on_attention_mismatch (bool): warn when the file's attention layout (heads,
        head_dim) differs from the module's; the load goes ahead. Default True.

Returns:
    None.)doc";

}  // namespace headgrad::python::docs
