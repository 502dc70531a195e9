// The docstrings of nn.cpp's bindings: Module, HookPoint, the layers and the toy models, with
// PyTorch's names. Shapes: N (or B) batch, L (or T) target / sequence length, S source
// length, E (or D) embed_dim / d_model, H heads, d head_dim, I = H * d, F dim_feedforward,
// V vocabulary, C classes.
#pragma once

namespace headgrad::python::docs {

// --- Module ------------------------------------------------------------------------------------
constexpr const char* module_type_name =
    R"doc(The module's type name, as repr() shows it ('Linear'; a Python module: its class).

Returns:
    str.)doc";

constexpr const char* module_named_parameters =
    R"doc(The parameters with their dotted names (torch.nn.Module.named_parameters).

In registration order.

Args:
    prefix (str): put before each name ('prefix.name'). Default ''.
    recurse (bool): include the submodules' parameters. Default True.

Returns:
    list of (str, Tensor) tuples, e.g. ('out_proj.weight', Tensor).)doc";

constexpr const char* module_parameters =
    R"doc(The parameters, in registration order (torch.nn.Module.parameters).

Args:
    recurse (bool): include the submodules' parameters. Default True.

Returns:
    list of Tensor (the parameters themselves, not copies).)doc";

constexpr const char* module_named_buffers =
    R"doc(The buffers with their dotted names (torch.nn.Module.named_buffers).

Args:
    prefix (str): put before each name. Default ''.
    recurse (bool): include the submodules' buffers. Default True.

Returns:
    list of (str, Tensor) tuples.)doc";

constexpr const char* module_buffers = R"doc(The buffers (torch.nn.Module.buffers).

Args:
    recurse (bool): include the submodules' buffers. Default True.

Returns:
    list of Tensor.)doc";

constexpr const char* module_named_children =
    R"doc(The direct submodules with their names (torch.nn.Module.named_children).

Returns:
    list of (str, Module) tuples, in registration order.)doc";

constexpr const char* module_children = R"doc(The direct submodules (torch.nn.Module.children).

Returns:
    list of Module, in registration order.)doc";

constexpr const char* module_named_modules =
    R"doc(This module and its descendants with dotted names (torch.nn.Module.named_modules).

Depth first.

Returns:
    list of (str, Module) tuples; the first is ('', self).)doc";

constexpr const char* module_modules =
    R"doc(This module and every descendant, depth first (torch.nn.Module.modules).

Returns:
    list of Module; the first is self.)doc";

constexpr const char* module_get_parameter =
    R"doc(The parameter of a dotted name (torch.nn.Module.get_parameter).

Args:
    target (str): e.g. 'layers.0.self_attn.in_proj_weight'.

Returns:
    Tensor (the parameter itself); IndexError listing the names when there is none.)doc";

constexpr const char* module_num_parameters = R"doc(The number of parameter elements.

Args:
    trainable_only (bool): count only parameters that require grad. Default False.

Returns:
    int.)doc";

constexpr const char* module_train =
    R"doc(Sets training mode on this module and its descendants (torch.nn.Module.train).

Dropout is active in training mode only.

Args:
    mode (bool): default True.

Returns:
    Module: this module.)doc";

constexpr const char* module_eval = R"doc(Sets evaluation mode: train(False) (torch.nn.Module.eval).

Returns:
    Module: this module.)doc";

constexpr const char* module_training = R"doc(Whether the module is in training mode.

Returns:
    bool.)doc";

constexpr const char* module_zero_grad =
    R"doc(Sets every parameter's .grad to None (torch.nn.Module.zero_grad).

Args:
    set_to_none (bool): must be True (ValueError otherwise). Default True.

Returns:
    None.)doc";

constexpr const char* module_double =
    R"doc(Converts every floating parameter and buffer to float64, in place.

Gradients are dropped.

Returns:
    Module: this module.)doc";

constexpr const char* module_float =
    R"doc(Converts every floating parameter and buffer to float32, in place.

Gradients are dropped.

Returns:
    Module: this module.)doc";

constexpr const char* module_cpu =
    R"doc(Moves every parameter and buffer to the CPU, in place (the same tensor handles).

Gradients are dropped.

Returns:
    Module: this module.)doc";

constexpr const char* module_cuda =
    R"doc(Moves every parameter and buffer to a GPU, in place (the same tensor handles).

An optimizer built before still holds them. Gradients are dropped.

Args:
    device (int): the GPU's number. Default 0.

Returns:
    Module: this module.)doc";

constexpr const char* module_device = R"doc(The device of the first parameter (or buffer).

Returns:
    headgrad.Device: 'cpu' for a module without any.)doc";

constexpr const char* module_register_parameter =
    R"doc(Registers a parameter under `name` (torch.nn.Module.register_parameter).

What assigning a Parameter to an attribute does.

Args:
    name (str): not yet taken by a parameter, buffer, submodule or hook point.
    param (Tensor or None): a leaf tensor; None records an absent optional parameter.
    requires_grad (bool): set on the tensor. Default True.

Returns:
    None.)doc";

constexpr const char* module_register_buffer =
    R"doc(Registers a buffer under `name` (torch.nn.Module.register_buffer).

A buffer is a tensor of the state dict that is not a parameter.

Args:
    name (str): not yet taken.
    tensor (Tensor or None).

Returns:
    None.)doc";

constexpr const char* module_add_module =
    R"doc(Registers a submodule under `name` (torch.nn.Module.add_module).

What assigning a Module to an attribute does.

Args:
    name (str): not yet taken.
    module (Module).

Returns:
    None.)doc";

constexpr const char* module_register_module =
    R"doc(Registers a submodule under `name`, as add_module (torch.nn.Module.register_module).

Args:
    name (str): not yet taken.
    module (Module).

Returns:
    None.)doc";

constexpr const char* hook_point_init = R"doc(A hook point.

Args:
    per_head (bool): the tensor passed through it has a head axis at dim 1, (N, H, ...), so
        hooks may take one head's slice. Default False.)doc";

constexpr const char* hook_point_per_head =
    R"doc(Whether the point's tensor has a head axis at dim 1, (N, H, ...).

Returns:
    bool.)doc";

// --- layers ----------------------------------------------------------------------------------
constexpr const char* linear =
    R"doc(y = x W^T + b (torch.nn.Linear).

weight (out_features, in_features) and bias (out_features) are drawn from
U(-1/sqrt(in_features), 1/sqrt(in_features)).)doc";

constexpr const char* linear_init = R"doc(A linear layer.

Args:
    in_features (int), out_features (int).
    bias (bool): register a bias. Default True.
    generator (Generator, keyword, optional): for the initial values; default the default
        generator.)doc";

constexpr const char* linear_forward = R"doc(input @ weight^T + bias.

Args:
    input (Tensor): (*, in_features), the parameters' dtype.

Returns:
    Tensor (*, out_features).)doc";

constexpr const char* linear_weight = R"doc(The weight parameter.

Returns:
    Tensor (out_features, in_features).)doc";

constexpr const char* linear_bias = R"doc(The bias parameter.

Returns:
    Tensor (out_features), or None without bias.)doc";

constexpr const char* linear_in_features = R"doc(The input width.

Returns:
    int.)doc";

constexpr const char* linear_out_features = R"doc(The output width.

Returns:
    int.)doc";

constexpr const char* linear_reset_parameters =
    R"doc(Draws weight and bias anew, as the constructor does.

Args:
    generator (Generator, optional): default the default generator.

Returns:
    None.)doc";

constexpr const char* unary_module =
    R"doc(The base of the modules with one tensor in and one out.

Embedding, LayerNorm, Dropout, ReLU, GELU and MLP.)doc";

constexpr const char* unary_forward = R"doc(The module applied to one tensor.

Args:
    input (Tensor): the module's input (see the module's class).

Returns:
    Tensor (see the module's class for its shape).)doc";

constexpr const char* embedding = R"doc(A lookup table of embedding vectors (torch.nn.Embedding).

ids int64 (*) -> (*, embedding_dim). weight (num_embeddings, embedding_dim) ~ N(0, 1); the
padding_idx row is zero and gets no gradient.)doc";

constexpr const char* embedding_init = R"doc(An embedding table.

Args:
    num_embeddings (int): V, the number of rows.
    embedding_dim (int): D.
    padding_idx (int, optional): a row kept at zero (negative counts from the end). Default
        None.
    generator (Generator, keyword, optional): for the initial values; default the default
        generator.)doc";

constexpr const char* embedding_weight = R"doc(The table.

Returns:
    Tensor (num_embeddings, embedding_dim).)doc";

constexpr const char* embedding_num_embeddings = R"doc(V, the number of rows.

Returns:
    int.)doc";

constexpr const char* embedding_embedding_dim = R"doc(D, the size of a row.

Returns:
    int.)doc";

constexpr const char* embedding_padding_idx = R"doc(The padding row, in [0, V).

Returns:
    int, or None without one.)doc";

constexpr const char* layer_norm =
    R"doc(Layer normalization over the last dimension (torch.nn.LayerNorm).

(x - mean) / sqrt(var + eps) * weight + bias: x (*, D) -> (*, D); weight starts at ones,
bias at zeros.)doc";

constexpr const char* layer_norm_init = R"doc(A layer norm over the last dimension.

Args:
    normalized_shape (int or a one-entry sequence of int): D (headgrad normalizes over the
        last dimension only).
    eps (float): default 1e-5.
    elementwise_affine (bool): register weight and bias. Default True.
    bias (bool): register the bias (with elementwise_affine). Default True.)doc";

constexpr const char* layer_norm_weight = R"doc(The scale.

Returns:
    Tensor (D), or None without elementwise_affine.)doc";

constexpr const char* layer_norm_bias = R"doc(The shift.

Returns:
    Tensor (D), or None without elementwise_affine or bias.)doc";

constexpr const char* layer_norm_eps = R"doc(The epsilon added to the variance.

Returns:
    float.)doc";

constexpr const char* dropout =
    R"doc(Inverted dropout (torch.nn.Dropout): x -> x's shape.

In training mode each element is zeroed with probability p and the rest scaled by
1 / (1 - p); the identity in eval mode.)doc";

constexpr const char* dropout_init = R"doc(A dropout layer.

Args:
    p (float): the probability of zeroing, in [0, 1]. Default 0.5.
    generator (Generator, keyword, optional): for the masks; default the default generator.)doc";

constexpr const char* dropout_p = R"doc(The probability of zeroing an element.

Returns:
    float.)doc";

constexpr const char* relu = R"doc(max(x, 0), elementwise (torch.nn.ReLU): x -> x's shape.)doc";

constexpr const char* relu_init = R"doc(A ReLU layer (no parameters).)doc";

constexpr const char* gelu = R"doc(GELU, elementwise (torch.nn.GELU): x -> x's shape.)doc";

constexpr const char* gelu_init = R"doc(A GELU layer (no parameters).

Args:
    approximate (str): 'tanh' for the tanh approximation; anything else ('none') the exact
        erf form. Default 'none'.)doc";

constexpr const char* mlp =
    R"doc(A two-layer perceptron, fc2(dropout(activation(fc1(x)))).

x (*, in) -> (*, out); fc1 Linear (in -> hidden), fc2 Linear (hidden -> out).)doc";

constexpr const char* mlp_init = R"doc(A two-layer perceptron.

Args:
    in_features (int), hidden_features (int).
    out_features (int): default 0: in_features.
    activation (str): 'gelu' (exact) or 'relu'. Default 'gelu'.
    dropout (float): after the activation. Default 0.0.
    bias (bool): biases in fc1 and fc2. Default True.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* mlp_fc1 = R"doc(The first layer.

Returns:
    Linear (in_features -> hidden_features).)doc";

constexpr const char* mlp_fc2 = R"doc(The second layer.

Returns:
    Linear (hidden_features -> out_features).)doc";

// --- attention -----------------------------------------------------------------------------------
constexpr const char* attention_forward =
    R"doc(Multi-head attention (torch.nn.MultiheadAttention.forward).

Args:
    query (Tensor): (L, N, E), (N, L, E) with batch_first, or (L, E) unbatched.
    key (Tensor): (S, N, kdim) (N first with batch_first; (S, kdim) unbatched).
    value (Tensor): (S, N, vdim), likewise.
    key_padding_mask (Tensor, optional): (N, S) ((S) unbatched): bool True = padding, or
        float added to the scores. Default None.
    need_weights (bool): also return the attention weights. Default True.
    attn_mask (Tensor, optional): (L, S) or (N*H, L, S): bool True = blocked, or float added
        to the scores. Default None.
    average_attn_weights (bool): average the weights over heads. Default True.
    is_causal (bool): block key j for query i when j > i (combined with attn_mask). Default
        False.

Returns:
    tuple (attn_output, attn_weights): attn_output shaped like query (E features);
    attn_weights (N, L, S') averaged, or (N, H, L, S') per head, or None without
    need_weights, where S' = S + add_bias_kv + add_zero_attn. A query whose keys are all
    masked gets zero weights (PyTorch 1.13: NaN).)doc";

constexpr const char* attention_embed_dim = R"doc(E, the query's and the output's width.

Returns:
    int.)doc";

constexpr const char* attention_num_heads = R"doc(H, the number of heads.

Returns:
    int.)doc";

constexpr const char* attention_head_dim =
    R"doc(d, the width of one head: head_size when set, else embed_dim // num_heads.

Returns:
    int.)doc";

constexpr const char* attention_batch_first =
    R"doc(Whether inputs and outputs are (N, L, E) rather than (L, N, E).

Returns:
    bool.)doc";

constexpr const char* attention_dropout =
    R"doc(The dropout probability on the attention weights (training mode).

Returns:
    float.)doc";

constexpr const char* attention_head_weights =
    R"doc(Head h's slices of the parameters (differentiable, sharing their gradient flow).

Args:
    head (int): in [0, num_heads).

Returns:
    dict {'w_q': Tensor (d, E), 'w_k': Tensor (d, kdim), 'w_v': Tensor (d, vdim), 'b_q',
    'b_k', 'b_v': Tensor (d) or None without bias, 'bias_k', 'bias_v': Tensor (d) or None
    without add_bias_kv, 'w_o': Tensor (E, d), its columns of out_proj.weight}.)doc";

constexpr const char* attention_head_grads =
    R"doc(Head h's slices of the parameters' gradients after backward.

Args:
    head (int): in [0, num_heads).

Returns:
    dict with head_weights(head)'s keys and shapes; None where a parameter has no
    gradient.)doc";

constexpr const char* attention_set_head_gates =
    R"doc(Multiplies each head's output z_h by a gate before the output projection.

As Michel et al. 2019: a gate of 0 ablates a head; gates that require grad get dL/dgate.
Gates are not parameters (not in the state dict).

Args:
    gates (Tensor): (H), or (N, H) per example of the next forwards; the parameters'
        dtype.

Returns:
    None.)doc";

constexpr const char* attention_clear_head_gates =
    R"doc(Removes the head gates (every head's gate is 1 again).

Returns:
    None.)doc";

constexpr const char* attention_head_gates = R"doc(The head gates in force.

Returns:
    Tensor (H) or (N, H), or None when there are none.)doc";

constexpr const char* attention_init =
    R"doc(A multi-head attention layer with torch.nn.MultiheadAttention's options and init.

The same values for the same generator, fused or per head.

Args:
    embed_dim (int): E.
    num_heads (int): H; E must be divisible by H unless head_size is set.
    dropout (float): on the attention weights, in training mode. Default 0.0.
    bias (bool): biases of the projections. Default True.
    add_bias_kv (bool): learned bias_k, bias_v appended as one more key and value.
        Default False.
    add_zero_attn (bool): a zero key and value appended. Default False.
    kdim (int, optional): the key's width. Default None: E.
    vdim (int, optional): the value's width. Default None: E.
    batch_first (bool): inputs (N, L, E) rather than (L, N, E). Default False.
    head_size (int, keyword, optional): d, the width of a head (Keras's key_dim); default
        None: E // H.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* mha_in_proj_weight =
    R"doc(The packed query, key and value projections (when kdim == vdim == E).

Returns:
    Tensor (3I, E), or None when the projections are separate.)doc";

constexpr const char* mha_q_proj_weight =
    R"doc(The query projection, when kdim or vdim differ from E.

Returns:
    Tensor (I, E), or None when packed in in_proj_weight.)doc";

constexpr const char* mha_k_proj_weight = R"doc(The key projection, when kdim or vdim differ from E.

Returns:
    Tensor (I, kdim), or None when packed in in_proj_weight.)doc";

constexpr const char* mha_v_proj_weight =
    R"doc(The value projection, when kdim or vdim differ from E.

Returns:
    Tensor (I, vdim), or None when packed in in_proj_weight.)doc";

constexpr const char* mha_in_proj_bias = R"doc(The packed projection biases.

Returns:
    Tensor (3I), or None without bias.)doc";

constexpr const char* mha_bias_k = R"doc(The appended key (add_bias_kv).

Returns:
    Tensor (1, 1, I), or None without add_bias_kv.)doc";

constexpr const char* mha_bias_v = R"doc(The appended value (add_bias_kv).

Returns:
    Tensor (1, 1, I), or None without add_bias_kv.)doc";

constexpr const char* mha_out_proj = R"doc(The output projection.

Returns:
    Linear (I -> E): weight (E, I), bias (E) or None.)doc";

constexpr const char* mha_reset_parameters =
    R"doc(Draws every parameter anew as the constructor does.

PyTorch's _reset_parameters: xavier_uniform_ projections, zero biases, xavier_normal_
bias_k and bias_v.

Args:
    generator (Generator, optional): default the default generator.

Returns:
    None.)doc";

constexpr const char* attention_head =
    R"doc(One attention head as a module of its own (a HeadwiseMultiheadAttention's heads).

q_proj Linear (E -> d), k_proj (kdim -> d), v_proj (vdim -> d), and bias_k, bias_v
(1, 1, d) with add_bias_kv; its parameters read 'heads.<h>.q_proj.weight', ....)doc";

constexpr const char* headwise_heads = R"doc(The heads, one module each.

Returns:
    list of AttentionHead, H entries.)doc";

constexpr const char* headwise_out_proj = R"doc(The output projection over the concatenated heads.

Returns:
    Linear (I -> E): weight (E, I).)doc";

constexpr const char* headwise_to_fused =
    R"doc(A MultiheadAttention holding a copy of these values.

The same options, dtype and training mode; no graph.

Returns:
    MultiheadAttention.)doc";

constexpr const char* headwise_from_fused =
    R"doc(A HeadwiseMultiheadAttention holding a copy of a fused layer's values.

The same options, dtype and training mode; no graph.

Args:
    fused (MultiheadAttention).

Returns:
    HeadwiseMultiheadAttention.)doc";

// --- transformer layers and stacks ---------------------------------------------------------------
constexpr const char* encoder_layer =
    R"doc(A transformer encoder layer (torch.nn.TransformerEncoderLayer).

Self-attention, then a feed-forward block linear2(dropout(activation(linear1(x)))), each
with a residual connection and a layer norm (after it, or before it with norm_first).
Input (S, N, E), (N, S, E) with batch_first, or (S, E); output of the same shape.)doc";

constexpr const char* decoder_layer =
    R"doc(A transformer decoder layer (torch.nn.TransformerDecoderLayer).

Self-attention, cross-attention to memory (multihead_attn), then the feed-forward block,
each with a residual connection and a layer norm (norm1 .. norm3). tgt (T, N, E), memory
(S, N, E) (N first with batch_first); output of tgt's shape.)doc";

constexpr const char* layer_init =
    R"doc(A transformer layer with torch's options and initialization.

Args:
    d_model (int): E.
    nhead (int): H.
    dim_feedforward (int): F. Default 2048.
    dropout (float): on the residual branches, the feed-forward block and the attention
        weights. Default 0.1.
    activation (str): 'relu' or 'gelu'. Default 'relu'.
    layer_norm_eps (float): default 1e-5.
    batch_first (bool): (N, S, E) rather than (S, N, E). Default False.
    norm_first (bool): pre-norm rather than post-norm. Default False.
    bias (bool): biases in the attention, linear1/2 and the norms. Default True.
    per_head (bool, keyword): HeadwiseMultiheadAttention (one module per head) instead of
        MultiheadAttention; same results and initial values. Default False.
    head_dim (int, keyword, optional): d; default None: d_model // nhead.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* encoder_layer_forward = R"doc(The layer applied to src.

Args:
    src (Tensor): (S, N, E), (N, S, E) with batch_first, or (S, E).
    src_mask (Tensor, optional): (S, S) or (N*H, S, S): bool True = blocked, or float added
        to the scores. Default None.
    src_key_padding_mask (Tensor, optional): (N, S): bool True = padding, or float added.
        Default None.
    is_causal (bool): block key j for query i when j > i. Default False.

Returns:
    Tensor of src's shape.)doc";

constexpr const char* decoder_layer_forward = R"doc(The layer applied to tgt, attending to memory.

Args:
    tgt (Tensor): (T, N, E), (N, T, E) with batch_first, or (T, E).
    memory (Tensor): (S, N, E), likewise.
    tgt_mask (Tensor, optional): (T, T) or (N*H, T, T): bool True = blocked, or float
        added. Default None.
    memory_mask (Tensor, optional): (T, S) or (N*H, T, S). Default None.
    tgt_key_padding_mask (Tensor, optional): (N, T): bool True = padding. Default None.
    memory_key_padding_mask (Tensor, optional): (N, S). Default None.
    tgt_is_causal (bool): causal self-attention. Default False.
    memory_is_causal (bool): causal cross-attention. Default False.

Returns:
    Tensor of tgt's shape.)doc";

constexpr const char* layer_self_attn = R"doc(The self-attention.

Returns:
    AttentionLayer: a MultiheadAttention, or a HeadwiseMultiheadAttention with per_head.)doc";

constexpr const char* layer_multihead_attn =
    R"doc(The cross-attention (queries from tgt, keys and values from memory).

Returns:
    AttentionLayer: a MultiheadAttention, or a HeadwiseMultiheadAttention with per_head.)doc";

constexpr const char* layer_linear1 = R"doc(The feed-forward block's first layer.

Returns:
    Linear (E -> F).)doc";

constexpr const char* layer_linear2 = R"doc(The feed-forward block's second layer.

Returns:
    Linear (F -> E).)doc";

constexpr const char* layer_norm1 = R"doc(The self-attention block's layer norm.

Returns:
    LayerNorm (E).)doc";

constexpr const char* layer_norm2 = R"doc(The feed-forward block's layer norm.

Returns:
    LayerNorm (E).)doc";

constexpr const char* encoder =
    R"doc(A stack of encoder layers and an optional final norm (torch.nn.TransformerEncoder).

src -> src's shape; parameters layers.<i>.* and norm.*.)doc";

constexpr const char* encoder_init = R"doc(A stack of encoder layers.

Args:
    encoder_layer (TransformerEncoderLayer): the layers' options (each layer is built and
        initialized anew from them; torch deep-copies this layer instead).
    num_layers (int).
    norm (optional): anything but None adds a final LayerNorm (ones and zeros). Default
        None.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* encoder_forward =
    R"doc(The layers applied in turn, then the final norm (if any).

Args:
    src (Tensor): (S, N, E), (N, S, E) with batch_first, or (S, E).
    mask (Tensor, optional): (S, S) or (N*H, S, S): bool True = blocked, or float added.
        Default None.
    src_key_padding_mask (Tensor, optional): (N, S): bool True = padding. Default None.
    is_causal (bool): block key j for query i when j > i. Default False.

Returns:
    Tensor of src's shape.)doc";

constexpr const char* encoder_layers = R"doc(The layers.

Returns:
    list of TransformerEncoderLayer, num_layers entries.)doc";

constexpr const char* stack_norm = R"doc(The final layer norm.

Returns:
    LayerNorm (E), or None without one.)doc";

constexpr const char* decoder =
    R"doc(A stack of decoder layers and an optional final norm (torch.nn.TransformerDecoder).

tgt, memory -> tgt's shape; parameters layers.<i>.* and norm.*.)doc";

constexpr const char* decoder_init = R"doc(A stack of decoder layers.

Args:
    decoder_layer (TransformerDecoderLayer): the layers' options (each layer is built and
        initialized anew from them).
    num_layers (int).
    norm (optional): anything but None adds a final LayerNorm (ones and zeros). Default
        None.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* decoder_forward =
    R"doc(The layers applied in turn to tgt, each attending to memory, then the final norm.

Args:
    tgt (Tensor): (T, N, E), (N, T, E) with batch_first, or (T, E).
    memory (Tensor): (S, N, E), likewise.
    tgt_mask (Tensor, optional): (T, T) or (N*H, T, T). Default None.
    memory_mask (Tensor, optional): (T, S) or (N*H, T, S). Default None.
    tgt_key_padding_mask (Tensor, optional): (N, T). Default None.
    memory_key_padding_mask (Tensor, optional): (N, S). Default None.
    tgt_is_causal (bool): default False.
    memory_is_causal (bool): default False.

Returns:
    Tensor of tgt's shape.)doc";

constexpr const char* decoder_layers = R"doc(The layers.

Returns:
    list of TransformerDecoderLayer, num_layers entries.)doc";

// --- toy models -------------------------------------------------------------------------------
constexpr const char* gpt_init =
    R"doc(A decoder-only toy transformer: tokens (B, T) -> logits (B, T, V).

Args:
    vocab_size (int): V, the output width (the vocabulary, the classes, or a regression's
        outputs).
    max_len (int): the longest sequence (rows of the position table).
    d_model (int): D. Default 64.
    nhead (int): H. Default 4.
    num_layers (int): default 2.
    dim_feedforward (int): default 0: 4 * d_model.
    dropout (float): on the embeddings, the attention weights and the residual branches.
        Default 0.0.
    activation (str): 'gelu' or 'relu'. Default 'gelu'.
    layer_norm_eps (float): default 1e-5.
    norm_first (bool): pre-norm layers and a final norm. Default True.
    bias (bool): default True.
    per_head (bool): HeadwiseMultiheadAttention in every layer (the same values). Default
        False.
    head_dim (int): d; 0: d_model // nhead. Default 0.
    input_dim (int): 0: the input is token ids; F > 0: float inputs (B, T, F) through a
        Linear input_projection. Default 0.
    causal (bool): causal self-attention; False: bidirectional. Default True.
    positions (bool): a learned position embedding. Default True.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* encoder_classifier_init =
    R"doc(An encoder classifier: tokens (B, T) -> logits (B, C).

The encoded sequence is mean-pooled over the positions that are not padding.

Args:
    vocab_size (int): V.
    max_len (int): the longest sequence.
    num_classes (int): C.
    d_model (int): D. Default 64.
    nhead (int): H. Default 4.
    num_layers (int): default 2.
    dim_feedforward (int): default 0: 4 * d_model.
    dropout (float): on the embeddings, the attention weights and the residual branches.
        Default 0.0.
    activation (str): 'gelu' or 'relu'. Default 'gelu'.
    layer_norm_eps (float): default 1e-5.
    norm_first (bool): pre-norm layers and a final norm. Default True.
    bias (bool): default True.
    per_head (bool): HeadwiseMultiheadAttention in every layer (the same values). Default
        False.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* fusion_classifier_init =
    R"doc(A text + tabular classifier: tokens (B, T) and features (B, F) -> logits (B, C).

Args:
    vocab_size (int): V.
    max_len (int): the longest text.
    num_features (int): F.
    num_classes (int): C.
    mode (str): 'fusion', 'text_only' or 'tabular_only'. Default 'fusion'.
    d_model (int): D. Default 64.
    nhead (int): H. Default 4.
    num_layers (int): the text encoder's layers. Default 2.
    num_tabular_layers (int): the tabular encoder's layers. Default 1.
    dim_feedforward (int): default 0: 4 * d_model.
    dropout (float): default 0.0.
    activation (str): 'gelu' or 'relu'. Default 'gelu'.
    layer_norm_eps (float): default 1e-5.
    norm_first (bool): default True.
    bias (bool): default True.
    per_head (bool): default False.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* encoder_decoder_init =
    R"doc(An encoder-decoder toy transformer: src (B, S), tgt (B, T) -> logits (B, T, V).

Args:
    src_vocab_size (int).
    max_src_len (int): S at most.
    tgt_vocab_size (int): V; 0: src_vocab_size. Default 0.
    max_tgt_len (int): T at most; 0: max_src_len. Default 0.
    d_model (int): D. Default 64.
    nhead (int): H. Default 4.
    num_encoder_layers (int): default 2.
    num_decoder_layers (int): default 2.
    dim_feedforward (int): default 0: 4 * d_model.
    dropout (float): default 0.0.
    activation (str): 'gelu' or 'relu'. Default 'gelu'.
    layer_norm_eps (float): default 1e-5.
    norm_first (bool): default True.
    bias (bool): default True.
    per_head (bool): default False.
    generator (Generator, keyword, optional): for the initial values.)doc";

constexpr const char* gpt_forward = R"doc(The logits of every position.

Args:
    input (Tensor): tokens (B, T) int64 (T <= max_len), or float (B, T, input_dim) when
        input_dim > 0.
    key_padding_mask (Tensor, optional): (B, T) bool, True = padding. Default None.

Returns:
    Tensor (B, T, V): with causal, position t depends on inputs up to t only.)doc";

constexpr const char* gpt_token_embedding = R"doc(The token embedding.

Returns:
    Embedding (V, D), or None when input_dim > 0.)doc";

constexpr const char* gpt_input_projection = R"doc(The input projection of float inputs.

Returns:
    Linear (input_dim -> D), or None when input_dim is 0.)doc";

constexpr const char* gpt_position_embedding = R"doc(The learned position embedding.

Returns:
    Embedding (max_len, D), or None without positions.)doc";

constexpr const char* gpt_layers = R"doc(The transformer layers (batch first, GPT's norm_first).

Returns:
    list of TransformerEncoderLayer, num_layers entries.)doc";

constexpr const char* gpt_norm = R"doc(The final layer norm (pre-norm models only).

Returns:
    LayerNorm (D), or None when norm_first is False.)doc";

constexpr const char* gpt_lm_head = R"doc(The output layer (no bias, untied from the embedding).

Returns:
    Linear (D -> V): weight (V, D).)doc";

constexpr const char* gpt_vocab_size = R"doc(V, the output width.

Returns:
    int.)doc";

constexpr const char* gpt_max_len = R"doc(The longest sequence the position table holds.

Returns:
    int.)doc";

constexpr const char* gpt_d_model = R"doc(D, the residual stream's width.

Returns:
    int.)doc";

constexpr const char* gpt_nhead = R"doc(H, the heads of each layer.

Returns:
    int.)doc";

constexpr const char* gpt_num_layers = R"doc(The number of layers.

Returns:
    int.)doc";

constexpr const char* gpt_per_head = R"doc(Whether the layers use HeadwiseMultiheadAttention.

Returns:
    bool.)doc";

constexpr const char* encoder_decoder_forward = R"doc(The logits of every target position.

Args:
    src (Tensor): (B, S) int64.
    tgt (Tensor): (B, T) int64; position t depends on tgt up to t only.
    src_key_padding_mask (Tensor, optional): (B, S) bool, True = padding. Default None.
    tgt_key_padding_mask (Tensor, optional): (B, T) bool. Default None.

Returns:
    Tensor (B, T, V).)doc";

constexpr const char* encoder_decoder_encode =
    R"doc(The encoder's output, for decoding step by step.

Args:
    src (Tensor): (B, S) int64.
    src_key_padding_mask (Tensor, optional): (B, S) bool, True = padding. Default None.

Returns:
    Tensor (B, S, D): the memory.)doc";

// --- Module's state and hook points; the classifiers' forward -------------------------------
constexpr const char* module_to = R"doc(Converts or moves the module, in place (torch.nn.Module.to).

Args:
    target (headgrad.dtype, str or Device): a dtype (headgrad.float64, 'float64') converts
        every floating parameter and buffer; a device ('cpu', 'cuda:0', a Device) moves them.
        Gradients are dropped.

Returns:
    Module: this module.)doc";

constexpr const char* module_state_dict =
    R"doc(The parameters and buffers by dotted name (torch.nn.Module.state_dict).

Returns:
    dict {str: numpy.ndarray}: copies (from the CPU), under PyTorch's names
    ('layers.0.self_attn.in_proj_weight').)doc";

constexpr const char* module_load_state_dict =
    R"doc(Copies values into the parameters and buffers (torch.nn.Module.load_state_dict).

Everything is checked before anything is written; a shape mismatch is always an error.

Args:
    state_dict (dict {str: numpy.ndarray, Tensor or torch.Tensor}): PyTorch's names; values
        are converted to each tensor's dtype.
    strict (bool): missing or unexpected names are errors. Default True.

Returns:
    named tuple IncompatibleKeys(missing_keys: list of str, unexpected_keys: list of str),
    both empty with strict.)doc";

constexpr const char* module_add_hook_point =
    R"doc(Registers `point` as this module's hook point `name`.

What assigning a HookPoint to an attribute of a Module written in Python does.

Args:
    name (str): not yet taken by a parameter, buffer, submodule or hook point.
    point (HookPoint).

Returns:
    None.)doc";

constexpr const char* module_hook_points =
    R"doc(This module's own hook points, in registration order.

Returns:
    list of (str, HookPoint) tuples: (its own name, the point).)doc";

constexpr const char* module_named_hook_points =
    R"doc(Every hook point of the module and its descendants, in model order.

Returns:
    list of (str, HookPoint) tuples: (full name, e.g. 'layers.0.self_attn.z', the point).)doc";

constexpr const char* encoder_classifier_forward = R"doc(The class logits of each sequence.

Args:
    tokens (Tensor): (B, T) int64, T <= max_len.
    key_padding_mask (Tensor, optional): (B, T) bool, True = padding (left out of the
        pooling). Default None.

Returns:
    Tensor (B, C).)doc";

constexpr const char* fusion_classifier_forward = R"doc(The class logits of each example.

Args:
    tokens (Tensor): (B, T) int64 (ignored in tabular_only mode).
    key_padding_mask (Tensor, optional): (B, T) bool, True = padding (ignored in
        tabular_only mode). Default None.
    features (Tensor, optional): (B, F) in the parameters' dtype (ignored, and may be None,
        in text_only mode). Default None.

Returns:
    Tensor (B, C).)doc";

}  // namespace headgrad::python::docs
