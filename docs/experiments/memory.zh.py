# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 内存：Pre-LN 能节省训练内存吗？ { #memory-does-pre-ln-save-training-memory }
#
# 本手册所依据的源文章中，有一篇声称：把层归一化（LayerNorm）
# 挪到子层前面（即[前置层归一化（Pre-LN）](../../placement/pre-ln/)），训练时的峰值显存还能再降
# 5–10 %，理由是 LayerNorm 之前的激活值不必为反向传播保留下来；那一节的标题甚至提到了推理显存。
# 文章没有给出任何出处，我们也没能找到。另一篇源文章则说，两种放置方式占用的内存相同。本实验针对除
# `norm_position` 外完全相同的 Pre-LN 模型和[后置层归一化（Post-LN）](../../placement/post-ln/)模
# 型，逐个张量地清点一个训练步为反向传播保留了什么，并测量整个训练步的峰值内存。
#
# ## 预期 { #what-we-expected }
#
# - **“激活值”指什么。** Korthikanti et al. 2022（arXiv 2205.05198，§4）把它定义为：
#   前向传播中创建、反向传播又需要用到的每一个张量，参数和优化器状态除外。autograd
#   保留的恰好就是这些张量，而 `torch.autograd.graph.saved_tensors_hooks`
#   能在每个张量被保存时看到它。
# - **LayerNorm 不论放在哪里，都要保留自己的输入。** $y = (x - \mu)/\sigma$ 对 $x$ 的梯度需要用到
#   $x$（或 $\hat{x}$）和 $\sigma$；PyTorch 的 LayerNorm
#   会保存它的输入，以及均值和标准差的倒数（下面第一个单元格会验证这一点）。
#   Korthikanti et al.（§4.1）给一层中的两个 LayerNorm 各记上其输入，即 $s \cdot b \cdot h$
#   个元素，他们的计数里没有任何一项取决于归一化放在哪里。在 Pre-LN 中，这个输入是残差流 $x$；在
#   Post-LN 中则是和 $x + F(x)$。两种情况都是一个形状相同的张量，所以那条说法给出的机制根本不存在。
# - **有一处差别对 Pre-LN 不利。** Pre-LN 堆叠在最后一层之后还需要一个归一化（GPT-2
#   报告，§2.3），Korthikanti et al.（§4.3）把这个“last layer-norm”算作额外的激活值显存。Post-LN
#   堆叠不需要这样的归一化（手册中的 `Stack` 没有加；PyTorch 的 `nn.Transformer` 却照样加了一个，见
#   pytorch issues #50086 和 #74092）。因此我们预期：每层的字节数相同，Pre-LN 的总量略大一些。
#
# ## 设置 { #settings }
#
# - 模型：`snippets/transformer.py` 中的 `Stack` 和
#   `GPT`（见[一个子层连接](../../placement/sublayer-connection/)）；Pre-LN 模型与 Post-LN 模型只有
#   `norm_position` 不同。作为对照，也统计了三明治形式（Peri-LN，每个子层两个归一化）。归一化层：
#   LayerNorm 和[均方根归一化（RMSNorm）](../../foundations/rmsnorm/)。因果注意力，激活函数为 GELU
#   的 MLP，$d_\text{ff} = 4\,d_\text{model}$，随机失活（Dropout）概率为 0，精度为 float32。
# - 保存的字节数：4 层的堆叠，批大小 4，三种规模
#   $(d_\text{model}, \text{heads}, \text{sequence length}) =$
#   (64, 4, 64)、(128, 4, 128)、(256, 8, 256)；输入需要梯度，正如可训练的嵌入层输出那样。
#   每个模型和输入都使用种子 0。
# - 计数规则：在一次前向传播中，把 autograd 保存的每个张量映射到它的存储（storage）；
#   一块存储不管有多少个被保存的张量指向它（视图、reshape
#   的结果、被两个算子保存的同一个张量），都只按其全部字节计一次，并记到最先保存它的最内层模块名下。
#   参数和缓冲区不计入。小张量（LayerNorm 的均值和 $1/\sigma$、因果掩码）计入；Korthikanti et al.
#   没有把它们算进去。
# - 峰值内存：一个 GPT（词表大小 256，4 层，$d_\text{model}$ 为 128，4 个头，序列长度 128，批大小
#   8，种子 0），一步 = 前向传播、交叉熵损失、反向传播，事先把梯度设为 `None`。在 CPU
#   上，由性能分析器（`profile_memory=True`）记录 PyTorch CPU
#   分配器的每一次分配和释放，峰值取累计量的最大值；在 CUDA 上则用
#   `torch.cuda.max_memory_allocated`。两者报告的都是超出该步开始时已分配量的字节数。
#   没有采用常驻内存集（RSS）：它还会把 Python 自身占用的内存，以及分配器已经释放、
#   却尚未归还给系统的内存都算进去。
# - 只用一个 CPU 线程（`torch.set_num_threads(1)`）：哪些张量被保存、被分配与线程数无关，
#   而单线程能让这些小运算在其他进程争抢 CPU 核心时依然跑得很快。
#
# 代码见 `snippets/activation_memory.py`：

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import display
from torch import nn

from snippets.activation_memory import (
    korthikanti_bytes_per_layer,
    layer_index,
    peak_step_memory,
    saved_for_backward,
    total_bytes,
)
from snippets.transformer import GPT, GPTConfig, Stack

torch.set_num_threads(1)  # see Settings: the counts do not depend on it
torch.manual_seed(0)
x = torch.randn(4, 64, 64, requires_grad=True)  # (B, T, C)
y = nn.LayerNorm(64)(x)
saved = sorted(a for a in dir(y.grad_fn) if a.startswith("_saved"))
print(f"{y.grad_fn.name()} keeps: {', '.join(saved)}")
print(f"its input is x itself: {y.grad_fn._saved_input is x}")
mean, rstd = y.grad_fn._saved_result1, y.grad_fn._saved_result2  # (B, T, 1) each
var = x.var(-1, unbiased=False, keepdim=True)
print(
    f"result1 is the mean: {torch.allclose(mean, x.mean(-1, keepdim=True), atol=1e-6)}, "
    f"result2 is 1/sigma: {torch.allclose(rstd, (var + 1e-5).rsqrt())}"
)
print("counted by saved_for_backward:")
for r in saved_for_backward(nn.LayerNorm(64), x):
    print(f"  shape {r.shape}, {r.nbytes} bytes")

z = nn.RMSNorm(64)(x)
print(f"RMSNorm's output comes from {z.grad_fn.name()}; counted:")
for r in saved_for_backward(nn.RMSNorm(64), x):
    print(f"  shape {r.shape}, {r.nbytes} bytes")

# %% [markdown]
# `result1` 和 `result2` 是均值和 $1/\sigma$，每个词元（token）一个数；weight 和 bias
# 是参数。所以无论放在哪里，LayerNorm 都会为反向传播保留自己的输入。RMSNorm
# 同样保留输入。如果它的输出来自 `MulBackward0` 节点，就说明 PyTorch
# 是用一串逐元素运算（平方、求均值、平方根倒数、两次乘法）而不是一个融合的核函数算出它的，
# 每个运算各自保留自己反向传播所需的东西：这里是输入、$1/\mathrm{RMS}$ 和归一化后的向量，比
# LayerNorm 多出一个与输入同样大小的张量。
#
# ## 按层、按放置方式统计 { #per-layer-per-placement }
#
# 对 4 层堆叠的每一层做同样的统计，取中间那种规模，字节数记在保存它们的模块名下。
# 层以外的部分（Pre-LN 和三明治形式的最终归一化）单独列出。

# %%
N_LAYERS, BATCH = 4, 4
SIZES = [(64, 4, 64), (128, 4, 128), (256, 8, 256)]  # (d_model, n_heads, seq_len)
PLACEMENTS = ("post", "pre", "sandwich")
NORM_KINDS = ("layernorm", "rmsnorm")


def count(placement, norm, d_model, n_heads, seq_len):
    torch.manual_seed(0)
    model = Stack(
        N_LAYERS, d_model, n_heads, 4 * d_model, norm_position=placement, norm=norm, causal=True
    )
    x = torch.randn(BATCH, seq_len, d_model, requires_grad=True)
    return saved_for_backward(model, x)


records = {
    (p, n, size): count(p, n, *size) for p in PLACEMENTS for n in NORM_KINDS for size in SIZES
}

MIB = 2**20
size = SIZES[1]
print(f"d_model {size[0]}, heads {size[1]}, seq_len {size[2]}, batch {BATCH}: MiB saved")
layer_cols = " ".join(f"layer {i}" for i in range(N_LAYERS))
print(f"{'norm':>9} {'placement':>9} | {layer_cols} | outside   total")
for n in NORM_KINDS:
    for p in PLACEMENTS:
        recs = records[(p, n, size)]
        per_layer = [
            total_bytes(recs, lambda r, i=i: layer_index(r.module) == i) for i in range(N_LAYERS)
        ]
        outside = total_bytes(recs, lambda r: layer_index(r.module) is None)
        cells = " ".join(f"{b / MIB:7.3f}" for b in per_layer)
        print(f"{n:>9} {p:>9} | {cells} | {outside / MIB:7.3f} {total_bytes(recs) / MIB:7.3f}")

# %% [markdown]
# 一层的字节都花在了哪里，按保存它们的模块类型分开统计（“MultiHeadAttention”指注意力的核心部分：
# Q、K、V、softmax 的输出和因果掩码；“Linear”指四个线性层的输入）：

# %% alt="一层为反向传播保存的 MiB 数：按模块、按归一化位置，分 LayerNorm 与 RMSNorm"
KINDS = ["Linear", "MultiHeadAttention", "GELU", "LayerNorm", "RMSNorm"]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True, constrained_layout=True)
for ax, n in zip(axes, NORM_KINDS, strict=True):
    bottom = [0.0] * len(PLACEMENTS)
    for kind in KINDS:
        heights = [
            total_bytes(
                records[(p, n, size)], lambda r, k=kind: layer_index(r.module) == 1 and r.kind == k
            )
            / MIB
            for p in PLACEMENTS
        ]
        if any(heights):
            ax.bar(["Post-LN", "Pre-LN", "Sandwich"], heights, bottom=bottom, label=kind)
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_title(f"one layer (layer 1), {n}")
    ax.set_xlabel("placement")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
axes[0].set_ylabel("MiB saved for backward")
plt.show()

for n in NORM_KINDS:
    for p in PLACEMENTS:
        layer = [r for r in records[(p, n, size)] if layer_index(r.module) == 1]
        norm_bytes = total_bytes(layer, lambda r: r.kind in ("LayerNorm", "RMSNorm"))
        print(
            f"{n:>9} {p:>9}: norms keep {norm_bytes / MIB:.3f} MiB of the layer's "
            f"{total_bytes(layer) / MIB:.3f} MiB"
        )

# %% [markdown]
# ## 与 Korthikanti et al. 的计数对照 { #against-korthikanti-et-als-count }
#
# 对于带随机失活的 16 位激活值，他们的式 (1)（§4.1）给出每层 $s b h (34 + 5as/h)$
# 字节。去掉随机失活（既没有掩码，也没有随机失活的输出）并改用 float32 后，同样这些张量共
# $4\,(16\,sbh + a s^2 b)$ 字节，即
# `korthikanti_bytes_per_layer(..., bytes_per_element=4, dropout=False)`。实测的 LayerNorm
# 各层应当只比它多出论文略去的那些小张量。

# %%
print(f"{'size (d, heads, seq)':>22} {'measured':>10} {'Eq. 1 tensors':>14} {'difference':>11}")
for d_model, n_heads, seq_len in SIZES:
    recs = records[("pre", "layernorm", (d_model, n_heads, seq_len))]
    measured = total_bytes(recs, lambda r: layer_index(r.module) == 1)
    formula = korthikanti_bytes_per_layer(seq_len, BATCH, d_model, n_heads, 4, dropout=False)
    small = 2 * (2 * BATCH * seq_len * 4) + seq_len * seq_len  # mean, 1/sigma; causal mask
    print(
        f"{(d_model, n_heads, seq_len)!s:>22} {measured:>10d} {formula:>14d} "
        f"{measured - formula:>11d}  = small tensors: {measured - formula == small}"
    )

# %% [markdown]
# ## 整个堆叠：Pre/Post 比值 { #whole-stacks-the-prepost-ratio }
#
# 如果 Pre-LN 能节省 5–10 %，那么它保存的字节数与 Post-LN 之比应当落在 0.90 到 0.95 之间。

# %% alt="保存字节数之比 Pre-LN / Post-LN：按堆叠规模与归一化类型，对照文章所称的 5-10 % 节省"
ratios = {}
print(f"{'size (d, heads, seq)':>22} {'norm':>10} {'Pre / Post':>11} {'Sandwich / Post':>16}")
for size in SIZES:
    for n in NORM_KINDS:
        post, pre, sandwich = (total_bytes(records[(p, n, size)]) for p in PLACEMENTS)
        ratios[(n, size)] = pre / post
        print(f"{size!s:>22} {n:>10} {pre / post:>11.4f} {sandwich / post:>16.4f}")

fig, ax = plt.subplots(figsize=(6.5, 3.6), constrained_layout=True)
labels = [f"d={d}, T={t}" for d, _, t in SIZES]
ax.axhspan(0.90, 0.95, color="tab:red", alpha=0.15, label="the claim: Pre-LN saves 5-10 %")
ax.axhline(1.0, color="black", linewidth=0.8)
for n, marker in zip(NORM_KINDS, "os", strict=True):
    ax.plot(labels, [ratios[(n, s)] for s in SIZES], marker=marker, label=n)
ax.set_xlabel("stack size (4 layers, batch 4)")
ax.set_ylabel("saved bytes, Pre-LN / Post-LN")
ax.set_ylim(0.85, 1.05)
ax.legend()
plt.show()

# %% [markdown]
# ## 完整训练步：GPT 的保存量与峰值内存 { #a-whole-training-step-gpt-saved-bytes-and-peak-memory }
#
# 两个模型的嵌入层、语言模型输出头（LM head）和交叉熵完全相同；Pre-LN 的 GPT 带有最终归一化。


# %%
def gpt_step(placement, norm, device="cpu"):
    torch.manual_seed(0)
    config = GPTConfig(
        vocab_size=256,
        block_size=128,
        n_layer=4,
        n_head=4,
        n_embd=128,
        norm_position=placement,
        norm=norm,
    )
    model = GPT(config).to(device)
    idx = torch.randint(0, 256, (8, 128), device=device)
    targets = torch.randint(0, 256, (8, 128), device=device)

    def step():
        _, loss = model(idx, targets)
        loss.backward()

    saved = total_bytes(saved_for_backward(model, idx, targets))
    model.zero_grad(set_to_none=True)
    return saved, peak_step_memory(step, device)


gpt = {(p, n): gpt_step(p, n) for p in ("post", "pre") for n in NORM_KINDS}
print(f"{'norm':>10} {'placement':>9} {'saved MiB':>10} {'peak MiB (CPU)':>15}")
for (p, n), (saved, peak) in sorted(gpt.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{n:>10} {p:>9} {saved / MIB:>10.2f} {peak / MIB:>15.2f}")
for n in NORM_KINDS:
    (s_post, k_post), (s_pre, k_pre) = gpt[("post", n)], gpt[("pre", n)]
    print(
        f"{n}: Pre/Post saved {s_pre / s_post:.4f}, peak {k_pre / k_post:.4f}; "
        f"peak difference {k_pre - k_post} bytes = saved difference: "
        f"{k_pre - k_post == s_pre - s_post}"
    )

if torch.cuda.is_available():
    for n in NORM_KINDS:
        (_, post), (_, pre) = gpt_step("post", n, "cuda"), gpt_step("pre", n, "cuda")
        print(f"CUDA {n}: peak Pre/Post {pre / post:.4f}")
else:
    print("CUDA is absent here: no torch.cuda.max_memory_allocated measurement.")

# %% [markdown]
# 推理时，无论哪种放置方式，都不会为反向传播保留任何东西：

# %%
with torch.no_grad():
    for p in ("post", "pre"):
        model = Stack(N_LAYERS, 64, 4, 256, norm_position=p, causal=True)
        n_saved = len(saved_for_backward(model, torch.randn(BATCH, 64, 64)))
        print(f"{p:>4}: tensors saved under torch.no_grad(): {n_saved}")

# %% [markdown]
# ## 大模型的规模下 { #at-a-large-models-size }
#
# 按 Korthikanti et al. 自己的计数：各层共 $L \cdot sbh(34 + 5as/h)$
# 字节（不考虑并行时的式 (5)），最终归一化在此基础上再增加 $2sbh$ 字节（§4.3）。对于
# GPT-3 175B，他们给出 $a = 96$、$s = 2048$、$h = 12288$（§5）以及 $L = 96$（表 3）：

# %%
s, b, h, a, n_layers = 2048, 1, 12288, 96, 96
layers = n_layers * korthikanti_bytes_per_layer(s, b, h, a)
final_norm = 2 * s * b * h
print(f"GPT-3 175B: the final norm adds {final_norm / layers:.4%} to the layers' activations")

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# - 逐层来看，Pre-LN 堆叠和 Post-LN 堆叠为反向传播保留的字节数完全相同，用 LayerNorm 还是 RMSNorm
#   都一样：两种放置方式下，一层中的两个归一化都保留了各自的输入，其余被保存的张量也完全一样。
#   那条说法给出的机制（“LayerNorm 之前的激活值不必保留”）是错的：在 Pre-LN
#   中，归一化的输入就是残差流，它照样被保留了下来。
# - 唯一的差别是 Pre-LN 的最终归一化，所以一个完整的 Pre-LN 模型保留的反而*多*一点，绝不会少
#   5–10 %；完整训练步的峰值之差恰好等于额外保存的那些张量的字节数。
#   这部分额外开销只是一个层大小的张量，而对比的是整个堆叠的激活值，所以层数越多、层越宽，
#   它的占比就越小；按论文自己的计数，到了 GPT-3 的规模，它可以忽略不计。
# - LayerNorm 各层与 Korthikanti et al. 式 (1) 中的张量吻合，
#   只差论文略去的逐词元小统计量和因果掩码。
# - 这里 RMSNorm 保留的比 LayerNorm 多，原因是在这个 PyTorch 版本的 CPU
#   上，它由一串逐元素运算拼成，而不是一个融合的核函数，每个运算都各自保存输入。
#   这是实现方式带来的开销，在两种放置方式下都一样。只有当放置方式改变了归一化的*数量*时，
#   内存才会随之改变：三明治形式每个子层有两个归一化，保留的明显更多。
# - 推理时根本不会为反向传播保存任何东西，所以这条说法对推理时的内存同样不成立。

# %%
peak_ratio = {n: gpt[("pre", n)][1] / gpt[("post", n)][1] for n in NORM_KINDS}
saving = {n: 1 - r for n, r in peak_ratio.items()}
holds = all(0.05 <= v <= 0.10 for v in saving.values())
verdict = "holds" if holds else "refuted"
print(
    f"Claim 'Pre-LN saves 5-10 % of peak training memory': {verdict} "
    f"(measured saving: LayerNorm {saving['layernorm']:+.1%}, "
    f"RMSNorm {saving['rmsnorm']:+.1%}; negative = Pre-LN uses more)"
)

mid = SIZES[1]
results = {
    "saved_ratio_pre_post_layernorm": f"{ratios[('layernorm', mid)]:.3f}",
    "saved_ratio_pre_post_rmsnorm": f"{ratios[('rmsnorm', mid)]:.3f}",
    "gpt_peak_ratio_pre_post_layernorm": f"{peak_ratio['layernorm']:.3f}",
    "gpt_peak_ratio_pre_post_rmsnorm": f"{peak_ratio['rmsnorm']:.3f}",
    "pre_ln_peak_saving_layernorm": f"{saving['layernorm']:+.1%}",
    "pre_ln_peak_saving_rmsnorm": f"{saving['rmsnorm']:+.1%}",
    "gpt3_final_norm_share": f"{final_norm / layers:.3%}",
    "claim_5_10_percent_verdict": verdict,
}
display(
    {
        "application/vnd.resnorm.results+json": results,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in results.items()),
    },
    raw=True,
)
