"""Type stubs of headgrad._headgrad.nn (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy

import headgrad._headgrad as _hg


class AttentionHead(Module):
    """One attention head as a module of its own (a HeadwiseMultiheadAttention's heads)."""

class AttentionLayer(Module):
    """What MultiheadAttention and HeadwiseMultiheadAttention share"""
    @property
    def batch_first(self) -> builtins.bool: ...
    def clear_head_gates(self: AttentionLayer) -> None: """Removes the head gates (every head's gate is 1 again)."""
    @property
    def dropout(self) -> builtins.float: ...
    @property
    def embed_dim(self) -> int: ...
    def forward(self: AttentionLayer, query: _hg.Tensor, key: _hg.Tensor, value: _hg.Tensor, key_padding_mask: Optional[_hg.Tensor] = ..., need_weights: builtins.bool = ..., attn_mask: Optional[_hg.Tensor] = ..., average_attn_weights: builtins.bool = ..., is_causal: builtins.bool = ...) -> tuple: """Multi-head attention (torch.nn.MultiheadAttention.forward)."""
    @property
    def head_dim(self) -> int: ...
    @property
    def head_gates(self) -> object: ...
    def head_grads(self: AttentionLayer, head: int) -> dict: """Head h's slices of the parameters' gradients after backward."""
    def head_weights(self: AttentionLayer, head: int) -> dict: """Head h's slices of the parameters (differentiable, sharing their gradient flow)."""
    @property
    def num_heads(self) -> int: ...
    def set_head_gates(self: AttentionLayer, gates: _hg.Tensor) -> None: """Multiplies each head's output z_h by a gate before the output projection."""

class Dropout(UnaryModule):
    """Inverted dropout (torch.nn.Dropout): x -> x's shape."""
    def __init__(self: Dropout, p: builtins.float = ..., *, generator: _hg.Generator = ...) -> None: """A dropout layer."""
    @property
    def p(self) -> builtins.float: ...

class Embedding(UnaryModule):
    """A lookup table of embedding vectors (torch.nn.Embedding)."""
    def __init__(self: Embedding, num_embeddings: int, embedding_dim: int, padding_idx: Optional[int] = ..., *, generator: _hg.Generator = ...) -> None: """An embedding table."""
    @property
    def embedding_dim(self) -> int: ...
    @property
    def num_embeddings(self) -> int: ...
    @property
    def padding_idx(self) -> Optional[int]: ...
    @property
    def weight(self) -> _hg.Tensor: ...

class EncoderClassifier(Module):
    """An encoder over tokens, mean-pooled, with a classification head"""
    def __init__(self: EncoderClassifier, vocab_size: int, max_len: int, num_classes: int, d_model: int = ..., nhead: int = ..., num_layers: int = ..., dim_feedforward: int = ..., dropout: builtins.float = ..., activation: str = ..., layer_norm_eps: builtins.float = ..., norm_first: builtins.bool = ..., bias: builtins.bool = ..., per_head: builtins.bool = ..., *, generator: _hg.Generator = ...) -> None: """An encoder classifier: tokens (B, T) -> logits (B, C)."""
    def forward(self: EncoderClassifier, tokens: _hg.Tensor, key_padding_mask: Optional[_hg.Tensor] = ...) -> _hg.Tensor: """The class logits of each sequence."""

class EncoderDecoder(Module):
    """An encoder-decoder toy transformer (sequence to sequence)"""
    def __init__(self: EncoderDecoder, src_vocab_size: int, max_src_len: int, tgt_vocab_size: int = ..., max_tgt_len: int = ..., d_model: int = ..., nhead: int = ..., num_encoder_layers: int = ..., num_decoder_layers: int = ..., dim_feedforward: int = ..., dropout: builtins.float = ..., activation: str = ..., layer_norm_eps: builtins.float = ..., norm_first: builtins.bool = ..., bias: builtins.bool = ..., per_head: builtins.bool = ..., *, generator: _hg.Generator = ...) -> None: """An encoder-decoder toy transformer: src (B, S), tgt (B, T) -> logits (B, T, V)."""
    def encode(self: EncoderDecoder, src: _hg.Tensor, src_key_padding_mask: Optional[_hg.Tensor] = ...) -> _hg.Tensor: """The encoder's output, for decoding step by step."""
    def forward(self: EncoderDecoder, src: _hg.Tensor, tgt: _hg.Tensor, src_key_padding_mask: Optional[_hg.Tensor] = ..., tgt_key_padding_mask: Optional[_hg.Tensor] = ...) -> _hg.Tensor: """The logits of every target position."""

class FusionClassifier(Module):
    """Text tokens and tabular features fused by cross-attention, then classified"""
    def __init__(self: FusionClassifier, vocab_size: int, max_len: int, num_features: int, num_classes: int, mode: str = ..., d_model: int = ..., nhead: int = ..., num_layers: int = ..., num_tabular_layers: int = ..., dim_feedforward: int = ..., dropout: builtins.float = ..., activation: str = ..., layer_norm_eps: builtins.float = ..., norm_first: builtins.bool = ..., bias: builtins.bool = ..., per_head: builtins.bool = ..., *, generator: _hg.Generator = ...) -> None: """A text + tabular classifier: tokens (B, T) and features (B, F) -> logits (B, C)."""
    def forward(self: FusionClassifier, tokens: _hg.Tensor, key_padding_mask: Optional[_hg.Tensor] = ..., features: Optional[_hg.Tensor] = ...) -> _hg.Tensor: """The class logits of each example."""

class GELU(UnaryModule):
    """GELU, elementwise (torch.nn.GELU): x -> x's shape."""
    def __init__(self: GELU, approximate: str = ...) -> None: """A GELU layer (no parameters)."""

class GPT(Module):
    """A decoder-only toy transformer"""
    def __init__(self: GPT, vocab_size: int, max_len: int, d_model: int = ..., nhead: int = ..., num_layers: int = ..., dim_feedforward: int = ..., dropout: builtins.float = ..., activation: str = ..., layer_norm_eps: builtins.float = ..., norm_first: builtins.bool = ..., bias: builtins.bool = ..., per_head: builtins.bool = ..., head_dim: int = ..., input_dim: int = ..., causal: builtins.bool = ..., positions: builtins.bool = ..., *, generator: _hg.Generator = ...) -> None: """A decoder-only toy transformer: tokens (B, T) -> logits (B, T, V)."""
    @property
    def d_model(self) -> int: ...
    def forward(self: GPT, input: _hg.Tensor, key_padding_mask: Optional[_hg.Tensor] = ...) -> _hg.Tensor: """The logits of every position."""
    @property
    def input_projection(self) -> Linear: ...
    @property
    def layers(self) -> List[TransformerEncoderLayer]: ...
    @property
    def lm_head(self) -> Linear: ...
    @property
    def max_len(self) -> int: ...
    @property
    def nhead(self) -> int: ...
    @property
    def norm(self) -> LayerNorm: ...
    @property
    def num_layers(self) -> int: ...
    @property
    def per_head(self) -> builtins.bool: ...
    @property
    def position_embedding(self) -> Embedding: ...
    @property
    def token_embedding(self) -> Embedding: ...
    @property
    def vocab_size(self) -> int: ...

class HeadwiseMultiheadAttention(AttentionLayer):
    """MultiheadAttention built from one AttentionHead module per head"""
    def __init__(self: HeadwiseMultiheadAttention, embed_dim: int, num_heads: int, dropout: builtins.float = ..., bias: builtins.bool = ..., add_bias_kv: builtins.bool = ..., add_zero_attn: builtins.bool = ..., kdim: Optional[int] = ..., vdim: Optional[int] = ..., batch_first: builtins.bool = ..., *, head_size: Optional[int] = ..., generator: _hg.Generator = ...) -> None: """A multi-head attention layer with torch.nn.MultiheadAttention's options and init."""
    @staticmethod
    def from_fused(fused: MultiheadAttention) -> HeadwiseMultiheadAttention: """A HeadwiseMultiheadAttention holding a copy of a fused layer's values."""
    @property
    def heads(self) -> List[AttentionHead]: ...
    @property
    def out_proj(self) -> Linear: ...
    def to_fused(self: HeadwiseMultiheadAttention) -> MultiheadAttention: """A MultiheadAttention holding a copy of these values."""

class HookPoint:
    """A place in a module's forward where hooks, captures and caches see the tensor (TransformerLens's HookPoint): assign one to an attribute of a Module written in Python (self.hook_x = HookPoint()) and pass the tensor through it in forward (x = self.hook_x(x)); per_head=True marks a tensor (N, H, ...) whose heads hooks may take one at a time"""
    def __call__(self: HookPoint, value: _hg.Tensor) -> _hg.Tensor: """The tensor the forward continues with: value, or the active hooks' replacement"""
    def __init__(self: HookPoint, per_head: builtins.bool = ...) -> None: """A hook point."""
    @property
    def name(self) -> str: ...
    @property
    def per_head(self) -> builtins.bool: ...

class LayerNorm(UnaryModule):
    """Layer normalization over the last dimension (torch.nn.LayerNorm)."""
    def __init__(self: LayerNorm, normalized_shape: object, eps: builtins.float = ..., elementwise_affine: builtins.bool = ..., bias: builtins.bool = ...) -> None: """A layer norm over the last dimension."""
    @property
    def bias(self) -> object: ...
    @property
    def eps(self) -> builtins.float: ...
    @property
    def weight(self) -> object: ...

class Linear(Module):
    """y = x W^T + b (torch.nn.Linear)."""
    def __init__(self: Linear, in_features: int, out_features: int, bias: builtins.bool = ..., *, generator: _hg.Generator = ...) -> None: """A linear layer."""
    @property
    def bias(self) -> object: ...
    def forward(self: Linear, input: _hg.Tensor) -> _hg.Tensor: """input @ weight^T + bias."""
    @property
    def in_features(self) -> int: ...
    @property
    def out_features(self) -> int: ...
    def reset_parameters(self: Linear, generator: _hg.Generator = ...) -> None: """Draws weight and bias anew, as the constructor does."""
    @property
    def weight(self) -> _hg.Tensor: ...

class MLP(UnaryModule):
    """A two-layer perceptron, fc2(dropout(activation(fc1(x))))."""
    def __init__(self: MLP, in_features: int, hidden_features: int, out_features: int = ..., activation: str = ..., dropout: builtins.float = ..., bias: builtins.bool = ..., *, generator: _hg.Generator = ...) -> None: """A two-layer perceptron."""
    @property
    def fc1(self) -> Linear: ...
    @property
    def fc2(self) -> Linear: ...

class Module:
    """The base of every layer (torch.nn.Module)"""
    def _module_call(self, *args: Any, **kwargs: Any) -> Any: ...
    def add_hook_point(self: Module, name: str, point: HookPoint) -> None: """Registers `point` as this module's hook point `name`."""
    def add_module(self: Module, name: str, module: Module) -> None: """Registers a submodule under `name` (torch.nn.Module.add_module)."""
    def buffers(self: Module, recurse: builtins.bool = ...) -> List[_hg.Tensor]: """The buffers (torch.nn.Module.buffers)."""
    def children(self: Module) -> List[Module]: """The direct submodules (torch.nn.Module.children)."""
    def cpu(self: object) -> object: """Moves every parameter and buffer to the CPU, in place (the same tensor handles)."""
    def cuda(self: object, device: int = ...) -> object: """Moves every parameter and buffer to a GPU, in place (the same tensor handles)."""
    @property
    def device(self) -> _hg.Device: ...
    def double(self: object) -> object: """Converts every floating parameter and buffer to float64, in place."""
    def eval(self: object) -> object: """Sets evaluation mode: train(False) (torch.nn.Module.eval)."""
    def float(self: object) -> object: """Converts every floating parameter and buffer to float32, in place."""
    def get_parameter(self: Module, target: str) -> _hg.Tensor: """The parameter of a dotted name (torch.nn.Module.get_parameter)."""
    def hook_points(self: Module) -> list: """This module's own hook points, in registration order."""
    def load_state_dict(self: Module, state_dict: object, strict: builtins.bool = ...) -> object: """Copies values into the parameters and buffers (torch.nn.Module.load_state_dict)."""
    def modules(self: Module) -> List[Module]: """This module and every descendant, depth first (torch.nn.Module.modules)."""
    def named_buffers(self: Module, prefix: str = ..., recurse: builtins.bool = ...) -> list: """The buffers with their dotted names (torch.nn.Module.named_buffers)."""
    def named_children(self: Module) -> List[Tuple[str, Module]]: """The direct submodules with their names (torch.nn.Module.named_children)."""
    def named_hook_points(self: Module) -> list: """Every hook point of the module and its descendants, in model order."""
    def named_modules(self: Module) -> list: """This module and its descendants with dotted names (torch.nn.Module.named_modules)."""
    def named_parameters(self: Module, prefix: str = ..., recurse: builtins.bool = ...) -> list: """The parameters with their dotted names (torch.nn.Module.named_parameters)."""
    def num_parameters(self: Module, trainable_only: builtins.bool = ...) -> int: """The number of parameter elements."""
    def parameters(self: Module, recurse: builtins.bool = ...) -> List[_hg.Tensor]: """The parameters, in registration order (torch.nn.Module.parameters)."""
    def register_buffer(self: Module, name: str, tensor: Optional[_hg.Tensor]) -> None: """Registers a buffer under `name` (torch.nn.Module.register_buffer)."""
    def register_module(self: Module, name: str, module: Module) -> None: """Registers a submodule under `name`, as add_module (torch.nn.Module.register_module)."""
    def register_parameter(self: Module, name: str, param: Optional[_hg.Tensor], requires_grad: builtins.bool = ...) -> None: """Registers a parameter under `name` (torch.nn.Module.register_parameter)."""
    def state_dict(self: Module) -> dict: """The parameters and buffers by dotted name (torch.nn.Module.state_dict)."""
    def to(self: object, target: object) -> object: """Converts or moves the module, in place (torch.nn.Module.to)."""
    def train(self: object, mode: builtins.bool = ...) -> object: """Sets training mode on this module and its descendants (torch.nn.Module.train)."""
    @property
    def training(self) -> builtins.bool: ...
    @property
    def type_name(self) -> str: ...
    def zero_grad(self: Module, set_to_none: builtins.bool = ...) -> None: """Sets every parameter's .grad to None (torch.nn.Module.zero_grad)."""

class MultiheadAttention(AttentionLayer):
    """torch.nn.MultiheadAttention: options, names, initialization and results"""
    def __init__(self: MultiheadAttention, embed_dim: int, num_heads: int, dropout: builtins.float = ..., bias: builtins.bool = ..., add_bias_kv: builtins.bool = ..., add_zero_attn: builtins.bool = ..., kdim: Optional[int] = ..., vdim: Optional[int] = ..., batch_first: builtins.bool = ..., *, head_size: Optional[int] = ..., generator: _hg.Generator = ...) -> None: """A multi-head attention layer with torch.nn.MultiheadAttention's options and init."""
    @property
    def bias_k(self) -> object: ...
    @property
    def bias_v(self) -> object: ...
    @property
    def in_proj_bias(self) -> object: ...
    @property
    def in_proj_weight(self) -> object: ...
    @property
    def k_proj_weight(self) -> object: ...
    @property
    def out_proj(self) -> Linear: ...
    @property
    def q_proj_weight(self) -> object: ...
    def reset_parameters(self: MultiheadAttention, generator: _hg.Generator = ...) -> None: """Draws every parameter anew as the constructor does."""
    @property
    def v_proj_weight(self) -> object: ...

class ReLU(UnaryModule):
    """max(x, 0), elementwise (torch.nn.ReLU): x -> x's shape."""
    def __init__(self: ReLU) -> None: """A ReLU layer (no parameters)."""

class TransformerDecoder(Module):
    """A stack of decoder layers and an optional final norm (torch.nn.TransformerDecoder)."""
    def __init__(self: TransformerDecoder, decoder_layer: TransformerDecoderLayer, num_layers: int, norm: object = ..., *, generator: _hg.Generator = ...) -> None: """A stack of decoder layers."""
    def forward(self: TransformerDecoder, tgt: _hg.Tensor, memory: _hg.Tensor, tgt_mask: Optional[_hg.Tensor] = ..., memory_mask: Optional[_hg.Tensor] = ..., tgt_key_padding_mask: Optional[_hg.Tensor] = ..., memory_key_padding_mask: Optional[_hg.Tensor] = ..., tgt_is_causal: builtins.bool = ..., memory_is_causal: builtins.bool = ...) -> _hg.Tensor: """The layers applied in turn to tgt, each attending to memory, then the final norm."""
    @property
    def layers(self) -> List[TransformerDecoderLayer]: ...
    @property
    def norm(self) -> LayerNorm: ...

class TransformerDecoderLayer(Module):
    """A transformer decoder layer (torch.nn.TransformerDecoderLayer)."""
    def __init__(self: TransformerDecoderLayer, d_model: int, nhead: int, dim_feedforward: int = ..., dropout: builtins.float = ..., activation: str = ..., layer_norm_eps: builtins.float = ..., batch_first: builtins.bool = ..., norm_first: builtins.bool = ..., bias: builtins.bool = ..., *, per_head: builtins.bool = ..., head_dim: Optional[int] = ..., generator: _hg.Generator = ...) -> None: """A transformer layer with torch's options and initialization."""
    def forward(self: TransformerDecoderLayer, tgt: _hg.Tensor, memory: _hg.Tensor, tgt_mask: Optional[_hg.Tensor] = ..., memory_mask: Optional[_hg.Tensor] = ..., tgt_key_padding_mask: Optional[_hg.Tensor] = ..., memory_key_padding_mask: Optional[_hg.Tensor] = ..., tgt_is_causal: builtins.bool = ..., memory_is_causal: builtins.bool = ...) -> _hg.Tensor: """The layer applied to tgt, attending to memory."""
    @property
    def linear1(self) -> Linear: ...
    @property
    def linear2(self) -> Linear: ...
    @property
    def multihead_attn(self) -> AttentionLayer: ...
    @property
    def self_attn(self) -> AttentionLayer: ...

class TransformerEncoder(Module):
    """A stack of encoder layers and an optional final norm (torch.nn.TransformerEncoder)."""
    def __init__(self: TransformerEncoder, encoder_layer: TransformerEncoderLayer, num_layers: int, norm: object = ..., *, generator: _hg.Generator = ...) -> None: """A stack of encoder layers."""
    def forward(self: TransformerEncoder, src: _hg.Tensor, mask: Optional[_hg.Tensor] = ..., src_key_padding_mask: Optional[_hg.Tensor] = ..., is_causal: builtins.bool = ...) -> _hg.Tensor: """The layers applied in turn, then the final norm (if any)."""
    @property
    def layers(self) -> List[TransformerEncoderLayer]: ...
    @property
    def norm(self) -> LayerNorm: ...

class TransformerEncoderLayer(Module):
    """A transformer encoder layer (torch.nn.TransformerEncoderLayer)."""
    def __init__(self: TransformerEncoderLayer, d_model: int, nhead: int, dim_feedforward: int = ..., dropout: builtins.float = ..., activation: str = ..., layer_norm_eps: builtins.float = ..., batch_first: builtins.bool = ..., norm_first: builtins.bool = ..., bias: builtins.bool = ..., *, per_head: builtins.bool = ..., head_dim: Optional[int] = ..., generator: _hg.Generator = ...) -> None: """A transformer layer with torch's options and initialization."""
    def forward(self: TransformerEncoderLayer, src: _hg.Tensor, src_mask: Optional[_hg.Tensor] = ..., src_key_padding_mask: Optional[_hg.Tensor] = ..., is_causal: builtins.bool = ...) -> _hg.Tensor: """The layer applied to src."""
    @property
    def linear1(self) -> Linear: ...
    @property
    def linear2(self) -> Linear: ...
    @property
    def norm1(self) -> LayerNorm: ...
    @property
    def norm2(self) -> LayerNorm: ...
    @property
    def self_attn(self) -> AttentionLayer: ...

class UnaryModule(Module):
    """The base of the modules with one tensor in and one out."""
    def forward(self: UnaryModule, input: _hg.Tensor) -> _hg.Tensor: """The module applied to one tensor."""
