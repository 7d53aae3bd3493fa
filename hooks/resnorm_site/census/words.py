"""The words the census page puts in its cells and sentences, per language."""

from __future__ import annotations

WORDS = {
    "en": {
        "norm": {
            "rmsnorm": "RMSNorm",
            "layernorm": "LayerNorm",
            "layernorm_nobias": "LayerNorm, no bias",
            "rmsnorm_scale_first": "RMSNorm, scaled before normalizing",
            "layernorm_scale_first": "LayerNorm, scaled before normalizing",
            "none": "none",
        },
        "weight": {"w": "w", "1+w": "1 + w", "none": "none", "other": "other"},
        "float32": {
            "f32_w32": "normalized and × w in float32, rounded once",
            "f32_w16": "normalized in float32, rounded, × w in bf16",
            "f32": "normalized in float32, rounded once",
            "rms_only": "1/rms only in float32",
            "bf16": "none: all in bf16",
            "f32_out": "in float32, returned as float32",
            "other": "other",
        },
        "place": {
            "pre": "Pre-LN",
            "post": "Post-LN",
            "around": "around",
            "output": "output only",
            "normed_skip": "normed skip",
            "connection": "inside the stream connection",
            "none": "none",
        },
        "parts": "attention {mixer}, MLP {mlp}",
        "parallel": "parallel, {place}",
        "mixed": "by layer: {forms}",
        "qk": {
            "head": "per head",
            "head_1p": "per head, 1 + w",
            "head_noweight": "per head, weightless",
            "proj": "whole projection",
            "proj_noweight": "whole projection, weightless",
            "clip": "length clip",
            "latent": "latent (MLA)",
            "named": "named in the source",
        },
        "v": "V: {forms}",
        "o": "head output: {forms}",
        "latent": "latents: {forms}",
        "gate": {"elementwise": "elementwise gate", "per_head": "per-head gate"},
        "sinks": {"learned": "learned sinks", "computed": "sinks per token"},
        "attn_cap": "attention {value} (class default)",
        "final_cap": "logits {value} (class default)",
        "cap_yes": "yes",
        "caps_none": "none (class default)",
        "eps_measured": "{values} (measured)",
        "topology": {
            "one": "one stream",
            "scaled": "one stream, scaled sum",
            "gated": "one stream, gated skip",
            "streams": "{n} streams, no mixing",
            "streams_mixed": "{n} streams, mixed",
            "depth": "attention over depth",
        },
        "final_norm": {
            "yes": "yes",
            "no": "no",
            "after_collapse": "yes, after combining the streams",
            "after_other": "yes, after another step",
            "unknown": "not found",
        },
        "none": "–",
        "sep": ", ",
        "semi": "; ",
        "unprobed_row": "{name} (not probed: {why}; {how})",
        "not_probed": "not probed",
        "why": {
            "config": "its default config does not build",
            "build": "the toy model does not build",
            "too_big": "the toy model does not shrink",
            "run": "the toy model does not run on text alone",
            "timeout": "the toy run takes too long",
            "probe": "the probe could not read it",
        },
        "read": "read from the source",
        "unread": "the source was not read either",
        "header": (
            "| family | norm | weight | float32 for a bf16 input | ε | placement | "
            "QK-norm and others | gate, sinks | soft-caps | residual | final norm |"
        ),
        "group": {
            "pre": "Pre-LN: {n} families",
            "parallel": "Parallel attention and MLP: {n} families",
            "around": "Norms around or after the sublayer: {n} families",
            "post": "Post-LN and normed skips: {n} families",
            "mixed": "Placement that differs by sublayer or by layer: {n} families",
            "other": "Norms elsewhere, or none found in the layer: {n} families",
            "unprobed": "Not probed: {n} families",
        },
        "rules": {
            "no_model": "{n} folders hold no model of their own (a tokenizer or a processor)",
            "encoder": "{n} are encoders: they have a masked-LM head",
            "encoder_decoder": "{n} are encoder-decoders",
            "no_lm": "{n} generate no text (vision, audio, embedding, detection models)",
            "no_config": "{n} have no config that builds",
            "reuses": "{n} multimodal families reuse another family's text decoder",
        },
        "left_out": (
            "Of the {folders} folders under `transformers/models/` in {version}, {rows} hold a "
            "decoder stack of their own and get a row. Left out, by the first rule that "
            "applies: {rules}."
        ),
        "and": " and ",
        "summary": [
            (
                "probed",
                "{probed} of the {rows} rows were computed by running a toy instance; "
                "{source} were read from the source and {unread} could not be read",
            ),
            ("rmsnorm", "{rmsnorm} families use RMSNorm in their layers, {layernorm} LayerNorm"),
            ("one_plus_w", "{one_plus_w} scale by 1 + w, {weightless} have no weight at all"),
            (
                "pre",
                "{pre} are Pre-LN in every layer; {around} put norms around or after a "
                "sublayer ({output} after it only), {post} are Post-LN, {parallel} run attention "
                "and MLP in parallel, {mixed} differ by layer",
            ),
            (
                "qk_norm",
                "{qk_norm} normalize queries and keys ({qk_head} per head, {qk_proj} over "
                "the whole projection), {v_norm} also the values",
            ),
            ("gate", "{gate} gate the attention output, {sinks} have attention sinks"),
            ("attn_cap", "{attn_cap} soft-cap the attention logits, {final_cap} the output logits"),
            (
                "streams",
                "{streams} carry several residual streams, {depth} attend over depth, "
                "{gated} scale or gate the skip",
            ),
            ("final_norm", "{final_norm} end with a final norm"),
        ],
    },
    "zh": {
        "norm": {
            "rmsnorm": "RMSNorm",
            "layernorm": "LayerNorm",
            "layernorm_nobias": "LayerNorm（无偏置）",
            "rmsnorm_scale_first": "RMSNorm（先缩放再归一化）",
            "layernorm_scale_first": "LayerNorm（先缩放再归一化）",
            "none": "无",
        },
        "weight": {"w": "w", "1+w": "1 + w", "none": "无", "other": "其他"},
        "float32": {
            "f32_w32": "归一化与乘 w 都在 float32 下，舍入一次",
            "f32_w16": "归一化在 float32 下，舍入后在 bf16 下乘 w",
            "f32": "归一化在 float32 下，舍入一次",
            "rms_only": "仅 1/rms 在 float32 下",
            "bf16": "无：全程 bf16",
            "f32_out": "在 float32 下，返回 float32",
            "other": "其他",
        },
        "place": {
            "pre": "Pre-LN",
            "post": "Post-LN",
            "around": "子层前后",
            "output": "仅输出",
            "normed_skip": "归一化后的跳跃连接",
            "connection": "在残差流的连接之内",
            "none": "无",
        },
        "parts": "注意力：{mixer}；MLP：{mlp}",
        "parallel": "并行，{place}",
        "mixed": "逐层不同：{forms}",
        "qk": {
            "head": "逐头",
            "head_1p": "逐头，1 + w",
            "head_noweight": "逐头，无权重",
            "proj": "整个投影",
            "proj_noweight": "整个投影，无权重",
            "clip": "长度截断",
            "latent": "潜变量（MLA）",
            "named": "源码中的命名",
        },
        "v": "V：{forms}",
        "o": "各头输出：{forms}",
        "latent": "潜变量：{forms}",
        "gate": {"elementwise": "逐元素门控", "per_head": "逐头门控"},
        "sinks": {"learned": "可学习的 sink", "computed": "逐 token 的 sink"},
        "attn_cap": "注意力 {value}（类默认值）",
        "final_cap": "logit {value}（类默认值）",
        "cap_yes": "有",
        "caps_none": "无（类默认值）",
        "eps_measured": "{values}（实测）",
        "topology": {
            "one": "单一残差流",
            "scaled": "单一残差流，按比例相加",
            "gated": "单一残差流，跳跃连接带门控",
            "streams": "{n} 条残差流，不混合",
            "streams_mixed": "{n} 条残差流，相互混合",
            "depth": "沿深度做注意力",
        },
        "final_norm": {
            "yes": "有",
            "no": "无",
            "after_collapse": "有，在合并残差流之后",
            "after_other": "有，在另一步之后",
            "unknown": "未找到",
        },
        "none": "–",
        "sep": "，",
        "semi": "；",
        "unprobed_row": "{name}（未探测：{why}；{how}）",
        "not_probed": "未探测",
        "why": {
            "config": "默认配置无法构建",
            "build": "玩具模型无法构建",
            "too_big": "玩具模型缩不小",
            "run": "玩具模型只给文本时无法运行",
            "timeout": "玩具模型运行太久",
            "probe": "探测读不出结果",
        },
        "read": "读自源码",
        "unread": "源码也没能读出",
        "header": (
            "| 模型族 | 归一化 | 权重 | bf16 输入时的 float32 计算 | ε | 位置 | "
            "QK 归一化及其他 | 门控、sink | 软上限 | 残差 | 最终归一化 |"
        ),
        "group": {
            "pre": "Pre-LN：{n} 个模型族",
            "parallel": "注意力与 MLP 并行：{n} 个模型族",
            "around": "归一化在子层前后或之后：{n} 个模型族",
            "post": "Post-LN 与归一化后的跳跃连接：{n} 个模型族",
            "mixed": "各子层或各层位置不同：{n} 个模型族",
            "other": "归一化在别处，或层内没有找到归一化：{n} 个模型族",
            "unprobed": "未探测：{n} 个模型族",
        },
        "rules": {
            "no_model": "{n} 个文件夹没有自己的模型（只有分词器或处理器）",
            "encoder": "{n} 个是编码器（有掩码语言模型头）",
            "encoder_decoder": "{n} 个是编码器-解码器",
            "no_lm": "{n} 个不生成文本（视觉、音频、嵌入、检测模型）",
            "no_config": "{n} 个没有能构建的配置",
            "reuses": "{n} 个多模态模型族沿用别的模型族的文本解码器",
        },
        "left_out": (
            "{version} 的 `transformers/models/` 下有 {folders} 个文件夹，其中 {rows} 个有自己的"
            "解码器网络，各占一行。其余按第一条适用的规则排除：{rules}。"
        ),
        "and": "；",
        "summary": [
            (
                "probed",
                "{rows} 行中有 {probed} 行由运行玩具模型算出；{source} 行读自源码，"
                "{unread} 行没能读出",
            ),
            ("rmsnorm", "{rmsnorm} 个模型族在层内用 RMSNorm，{layernorm} 个用 LayerNorm"),
            ("one_plus_w", "{one_plus_w} 个按 1 + w 缩放，{weightless} 个完全没有权重"),
            (
                "pre",
                "{pre} 个每层都是 Pre-LN；{around} 个在子层前后或之后放归一化（其中 {output} 个"
                "只放在之后），{post} 个是 Post-LN，{parallel} 个让注意力和 MLP 并行，{mixed} 个"
                "逐层不同",
            ),
            (
                "qk_norm",
                "{qk_norm} 个对查询和键做归一化（{qk_head} 个逐头，{qk_proj} 个对整个投影），"
                "{v_norm} 个还对值做归一化",
            ),
            ("gate", "{gate} 个给注意力输出加门控，{sinks} 个有注意力 sink"),
            (
                "attn_cap",
                "{attn_cap} 个对注意力 logit 做软上限，{final_cap} 个对输出 logit 做软上限",
            ),
            (
                "streams",
                "{streams} 个带多条残差流，{depth} 个沿深度做注意力，{gated} 个对跳跃连接"
                "按比例缩放或加门控",
            ),
            ("final_norm", "{final_norm} 个在最后一层之后有最终归一化"),
        ],
    },
}
