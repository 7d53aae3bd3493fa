"""A family's config at toy size: the class defaults, with every width, depth and count
made small, so that the whole text model builds and runs in milliseconds on a CPU.

Only what the defaults hold is changed, through the class's own constructor, so values
the config derives from others (head_dim, layer_types) are derived again at the new size.
"""

from __future__ import annotations

import re

HIDDEN = 64
HEAD_DIM = 16
# A width, count or rank and the value it gets (only ever made smaller), first match wins.
SIZES = (
    (r"hidden_size|n_embd|d_model|model_dim|embed_dim|dim|word_embed_proj_dim", HIDDEN),
    (r"hidden_dim|n_embed|d_embed|embedding_size|emb_dim", HIDDEN),
    (r".*intermediate.*|ffn_dim|n_inner|ffn_hidden_size|.*_ffn_dim|moe_hidden_size|ffn_size", 64),
    (r"d_inner|inner_dim|ff_dim|mlp_dim|ffn_hidden_dim", 64),
    (r"num_attention_heads|n_head|num_heads|n_heads|attention_heads|n_attn_heads", 4),
    (r"num_key_value_heads|n_kv_heads|num_kv_heads|multi_query_group_num|kv_heads", 2),
    (r"head_dim|v_head_dim|attention_head_dim|kv_channels|head_size|dim_head", HEAD_DIM),
    (r"qk_nope_head_dim|qk_rope_head_dim|rotary_dim|rope_dim|index_head_dim", 8),
    (r"kv_lora_rank|q_lora_rank|o_lora_rank|.*_lora_rank|.*lora.*dim", 16),
    (r"n_routed_experts|num_experts|num_local_experts|moe_num_experts|n_experts", 4),
    (r"num_routed_experts|num_experts_routed|moe_num_routed_experts", 4),
    (r"num_experts_per_tok|moe_topk|top_k|num_experts_per_token|moe_k|n_activated_experts", 2),
    (r"n_group|topk_group|num_expert_group|topk_groups", 1),
    (r"index_n_heads", 4),
    (r"vocab_size|vocab_size_per_layer_input", 512),
    (r"hidden_size_per_layer_input", 16),
    (r"num_kv_shared_layers", 0),
    (r"n_groups|mamba_n_groups|ssm_n_groups|num_groups", 1),
    (r"state_size|ssm_state_size|mamba_d_state|d_state", 8),
    (r"mamba_n_heads|mamba_num_heads|ssm_num_heads|linear_num_value_heads", 4),
    (r"mamba_d_head|mamba_head_dim|ssm_head_dim|linear_value_head_dim|linear_key_head_dim", 8),
    (r"linear_num_key_heads", 2),
    (r"chunk_size|mamba_chunk_size", 16),
    (r"max_position_embeddings|n_positions|n_ctx|max_seq_len|seq_length", 512),
)
# Counts a default leaves unset (None) that the modeling code still divides or indexes by.
UNSET = (
    (r"num_experts|n_routed_experts|num_local_experts|moe_num_experts", 4),
    (r"num_experts_per_tok|moe_topk|top_k|num_experts_per_token", 2),
    (r"sliding_window", 64),  # longer than the toy sequence: the same numbers as none
    (r".*_budget", 8),
    (r".*compress_ratio", 2),
    (r"n_shared_experts|num_shared_experts", 1),
    (r".*intermediate.*", 64),
    (r"indexer_n_heads", 2),
    (r"indexer_kv_heads", 1),
    (r".*top_k.*", 2),
    (r"indexer_head_dim", 16),
)
LAYERS = r"num_hidden_layers|n_layer|num_layers|n_layers|num_decoder_layers"
MAX_LAYERS = 8  # enough for one of each layer type in the usual patterns
MIN_LAYERS = 2


def defaults(config_class) -> dict:
    return _str_keys(config_class().to_dict())


def _str_keys(values: dict) -> dict:
    return {
        k: _str_keys(v) if isinstance(v, dict) else v
        for k, v in values.items()
        if isinstance(k, str)
    }


def _layer_count(values: dict) -> tuple[str | None, int | None]:
    for key, value in values.items():
        if re.fullmatch(LAYERS, key) and isinstance(value, int) and not isinstance(value, bool):
            return key, value
    return None, None


def _kinds_span(kinds: list) -> int:
    """How many leading layers hold every kind of layer in a per-layer list."""
    seen: set = set()
    span = 0
    for i, kind in enumerate(kinds):
        key = repr(kind)
        if key not in seen:
            seen.add(key)
            span = i + 1
    return span


def overrides(values: dict) -> dict:
    """What to pass to the config class so that its defaults become a toy model."""
    out: dict = {}
    layer_key, layers = _layer_count(values)
    per_layer = [v for v in values.values() if isinstance(v, list) and layers and len(v) == layers]
    depth = MIN_LAYERS
    for kinds in per_layer:
        depth = max(depth, min(_kinds_span(kinds), MAX_LAYERS))
    if layers:
        depth = min(depth, layers)
        out[layer_key] = depth
        for key, value in values.items():
            if isinstance(value, list) and len(value) == layers:
                out[key] = value[:depth]
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or key == layer_key:
            continue
        for pattern, small in SIZES:
            if re.fullmatch(pattern, key):
                if value > small:
                    out[key] = small
                break
    # the same heads for keys as for queries when the defaults tie them
    heads = values.get("num_attention_heads")
    if heads is not None and values.get("num_key_value_heads") == heads:
        out["num_key_value_heads"] = out.get("num_attention_heads", heads)
    vocab = out.get("vocab_size", values.get("vocab_size"))
    if isinstance(vocab, int):
        for key, value in values.items():
            if not key.endswith(("token_id", "token_ids", "_id")):
                continue
            if isinstance(value, int) and not isinstance(value, bool) and value >= vocab:
                out[key] = min(vocab - 1, 1 + len(out) % 7)
            elif isinstance(value, list) and any(isinstance(v, int) and v >= vocab for v in value):
                out[key] = [1]
    for key, value in values.items():
        if value is None:
            for pattern, small in UNSET:
                if re.fullmatch(pattern, key):
                    out[key] = small
                    break
    _ties(values, out)
    _derived(values, out)
    for key, value in values.items():
        # a nested config (a vision tower, a patcher) at toy size too
        if isinstance(value, dict) and _layer_count(value)[0] and key != "rope_parameters":
            out[key] = {**value, **overrides(value)}
    return out


def _ties(values: dict, out: dict) -> None:
    """Head widths the defaults set equal stay equal (DeepSeek's head_dim is its RoPE part)."""
    dims = [k for k in out if re.search(r"head_dim|rope|rotary", k)]
    for a in dims:
        for b in dims:
            if a < b and values.get(a) == values.get(b):
                out[a] = out[b] = min(out[a], out[b])


def _derived(values: dict, out: dict) -> None:
    """Values the modeling code needs and a default leaves unset or inconsistent at toy size."""
    hidden = out.get("hidden_size", values.get("hidden_size"))
    heads = out.get("num_attention_heads", values.get("num_attention_heads"))
    if "head_dim" in values and values["head_dim"] is None and hidden and heads:
        out["head_dim"] = hidden // heads
    if "num_key_value_heads" in values and values["num_key_value_heads"] is None and heads:
        out["num_key_value_heads"] = heads
    expand = values.get("mamba_expand", values.get("expand"))
    if isinstance(values.get("mamba_d_ssm"), int):  # the SSM's width is heads × head width
        heads_ssm = out.get("mamba_n_heads", values.get("mamba_n_heads"))
        out["mamba_d_ssm"] = heads_ssm * out.get("mamba_d_head", values.get("mamba_d_head"))
    elif isinstance(expand, int) and hidden:
        for count, width in (("mamba_n_heads", "mamba_d_head"), ("num_heads", "head_dim")):
            n = out.get(count, values.get(count))
            if (
                isinstance(n, int)
                and width in values
                and ("state_size" in values or count[0] == "m")
            ):
                out[width] = expand * hidden // n
    rope = values.get("rope_parameters")
    if isinstance(rope, dict) and ("rope_type" in rope or "rope_theta" in rope):
        factor = rope.get("partial_rotary_factor", values.get("partial_rotary_factor", 1.0)) or 1.0
        width = out.get("head_dim", values.get("head_dim")) or HEAD_DIM
        half = int(width * factor) // 2
        sections = rope.get("mrope_section") or [16, 24, 24]
        if "mrope_section" in rope or values.get("_mrope"):
            out["rope_parameters"] = {**rope, "mrope_section": _sections(sections, half)}


def _sections(sections: list[int], half: int) -> list[int]:
    """An M-RoPE split scaled to half the toy head's rotary width."""
    total = sum(sections)
    scaled = [max(1, round(s * half / total)) for s in sections]
    scaled[0] += half - sum(scaled)
    return scaled


def _reads_mrope(config_class) -> bool:
    """Whether the family's modeling code falls back on M-RoPE sections of its own."""
    import importlib.util

    package = config_class.__module__.rsplit(".", 1)[0]
    name = package.rsplit(".", 1)[-1]
    spec = importlib.util.find_spec(f"{package}.modeling_{name}")
    if spec is None or spec.origin is None:
        return False
    with open(spec.origin, encoding="utf-8") as handle:
        return '.get("mrope_section", [' in handle.read()


def toy_config(config_class):
    """The config class's defaults at toy size, eager attention, no cache."""
    values = defaults(config_class)
    # a text config whose model reads M-RoPE sections it does not set itself (Qwen2-VL)
    values["_mrope"] = "mrope_section" in getattr(
        config_class, "ignore_keys_at_rope_validation", ()
    ) or _reads_mrope(config_class)
    changes = overrides(values)
    config = config_class(**changes)
    config._attn_implementation = "eager"
    if hasattr(config, "use_cache"):
        config.use_cache = False
    return config
