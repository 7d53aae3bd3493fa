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
# # 预热与学习率：Post-LN 对比 Pre-LN { #warmup-and-learning-rate-post-ln-vs-pre-ln }
#
# [后置层归一化（Post-LN）](../../placement/post-ln/)的 Transformer 是否需要学习率预热（warmup），
# 而[前置层归一化（Pre-LN）](../../placement/pre-ln/)的 Transformer 却不需要？这个 notebook
# 用两种放置方式训练同一个小型 GPT 语言模型，分别在有预热和无预热、中等学习率和高学习率下训练，
# 数据是代码自己生成的一种合成语言（不下载任何东西）。每次构建网站都会执行本页，
# 下面的每个数字都由那次运行打印出来。
#
# ## 我们的预期 { #what-we-expected }
#
# - **Post-LN 需要预热。** Xiong 等人 2020
#   年（[arXiv 2002.04745](https://arxiv.org/abs/2002.04745), §3.2）用 Adam（β = (0.9, 0.98)）在
#   IWSLT14 De-En 上训练一个 6 + 6 层的 Post-LN Transformer：不用预热只能达到 8.45
#   BLEU，用了预热则约为 34；预热 500 步时，峰值学习率 5e-4 能达到 31.16 BLEU，1e-3
#   却只有 2.77。学习率越高，预热就越重要。
# - **原因。** 初始化时，Post-LN 最后几层的梯度不随深度缩小，而 Pre-LN 的梯度按 $1/\sqrt{L}$
#   缩小（§3.3，定理 1；见
#   [Post-LN](../../placement/post-ln/#what-xiong-et-al-proved-theorem-1-and-lemma-2)
#   一页）。梯度本来就大，又从第一步起就用满学习率，Post-LN 最初的几次更新就会很大；
#   预热让这些更新保持在较小的幅度，直到模型离开初始化点。这个论证针对的是**初始化时**的模型，
#   所以初始化方式本身也是设置的一部分。
# - **Pre-LN 不用预热也能训练**（§4）：在 IWSLT14 上，学习率 5e-4、不用预热时约为 34 BLEU；在 BERT
#   上，采用 10k 步预热、学习率 1e-4 的 Post-LN 在学习率提高到 3e-4 时发散，而 Pre-LN
#   在这个学习率下不用预热也能训练。
# - **源文章**还补充说，Pre-LN“可以使用更大的学习率，预热 0–500 步即可”，并且“收敛更快”。
#   第一条就是上面 Xiong 等人的 BERT 结果；“0–500 步”则没有找到出处（见 [Pre-LN
#   页面](../../placement/pre-ln/)中关于预热论断的一节）。至于速度，Xiong 等人报告，在 IWSLT14 上
#   Pre-LN 第 9 个 epoch 的结果就与 Post-LN 第 15 个 epoch
#   相当（§4）。下面会在小得多的规模上逐一检验这三条。
#
# ## 设置 { #settings }
#
# - **数据**：`snippets/lm_experiment.py` 中的 `MarkovLanguage`：一个定义在 16
#   个词元（token）上的随机稀疏二阶马尔可夫链；每一对前序词元只允许 3 个后继词元，概率随机（种子
#   0）。要预测得好，就得用到往前数第二个词元，因此模型必须学会注意力。
#   每一步都抽取一个新批次（从不重复使用），同一种子的所有模型看到的批次相同。马尔可夫链是已知的，
#   所以最优损失可以精确算出；另外还有三个参照点（在下面打印）：`uniform`（ln
#   16，相当于一个什么都不知道的模型）、`unigram`（只用词元频率）、`bigram`（只看前一个词元，
#   不需要注意力）。
# - **模型**：`snippets/transformer.py` 中的 `GPT`：4 层，`n_embd` 64，4 个头，`block_size`
#   16，LayerNorm，不用随机失活（dropout），`norm_position` 取 "post" 或 "pre"（Pre-LN
#   带最终归一化）。**重新初始化**：每个 `nn.Linear` 的权重（包括与词元嵌入绑定的语言模型头）都取
#   Xavier 正态分布（`torch.nn.init.xavier_normal_`），所有偏置为零；位置嵌入保留 `GPT` 的
#   N(0, 0.02)。融合的查询/键/值权重 $3d \times d$
#   作为一个矩阵整体初始化（`xavier_init_(model, qkv="fused")`，与 PyTorch 的
#   `nn.MultiheadAttention` 对其 `in_proj_weight` 的做法相同），因此 $W_q$、$W_k$、$W_v$
#   的权重比分成三个独立的 $d \times d$ 矩阵初始化时小 $\sqrt{2}$
#   倍；后者是[梯度](../gradients_at_init/)实验和[深度](../depth/)实验采用的设置。种子相同时，
#   两种放置方式从相同的权重出发。`GPT` 默认使用的 GPT-2 初始化放在最后尝试，因为它会改变结论。
# - **训练**：Adam，β = (0.9, 0.98)，无权重衰减，无梯度裁剪；共 150 步，每步 32 条序列、每条 16
#   个词元；线性预热 0 步或 50 步，之后余弦衰减到 0；峰值学习率 2e-3（中等）或 1e-2（高）。由 8
#   次运行组成的网格使用模型种子和数据种子 0；决定问题的那两次运行，则在两种初始化下各用种子
#   0、1、2 跑一遍。“最终损失”是最后 20 步训练损失的平均值。
# - **结论用语**：“diverged”（发散）指损失出现非有限值，或最终损失高于 ln 16；“no better than
#   unigram”（不比 unigram 好）指最终损失高于 unigram 损失减去 0.1 nats（模型只学到了词元频率，
#   别的什么都没学到）；其余情况为“trained”（训练成功）。
# - **单个 CPU 线程**（`torch.set_num_threads(1)`）：这么小的模型，每个运算都很小；
#   在我们的测试中，当其他程序同时占用 CPU 核心时，把运算拆到多个线程上会让训练慢得多；
#   单线程能让运行时间保持稳定。
#
# **这些设置是怎么选出来的。** 在写这一页之前，我们在页面之外手动试过（这些运行不在本页重复）：4
# 层和 6 层；32、48 和 64 的特征宽度；每批 16、24 和 32 条序列，每条 16 或 32 个词元；120、150 和
# 200 步；预热后保持常数或余弦衰减；30 到 60 步的预热；从 1e-3 到 1e-2 的峰值学习率；8、16 和 32
# 个词元的词表；Xavier 初始化和 GPT-2 初始化；种子 0 到 2。当时看到的情况，用文字概括如下：Xavier
# 初始化的 Post-LN 在高学习率、无预热时会停滞，4 层和 6 层都是如此；宽度为 64
# 时每个种子都停滞，宽度为 48 时部分或全部种子停滞，宽度为 32 时没有一个种子停滞（定理 1
# 的上界随宽度 $d$ 增长）；学习率在 1e-3 到 3e-3 之间时，每次运行都能训练；词表只有 8
# 个词元时，Post-LN 在 1e-2 下即使预热 30 步也会停滞，而 32 个词元又太难，几百步之内学不好；使用
# GPT-2 初始化时，高学习率、无预热要么对两种放置方式都有害（6
# 层，常数学习率），要么两者都不停滞（4 层，余弦衰减）。本页的网格是既能放进页面的时间预算、
# 又能展示这一效应的最省的一组；最后几次运行展示的则是会把这一效应掩盖掉的初始化方式。

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import display

from snippets.lm_experiment import (
    MarkovLanguage,
    first_step_below,
    outcome,
    train_lm,
    xavier_init_,
)
from snippets.transformer import GPT, GPTConfig

torch.set_num_threads(1)  # see Settings

VOCAB, ORDER, BRANCHING = 16, 2, 3
N_LAYER, N_EMBD, N_HEAD = 4, 64, 4
BATCH, SEQ_LEN, STEPS = 32, 16, 150
LRS = {"moderate": 2e-3, "high": 1e-2}
WARMUPS = (0, 50)
PLACEMENTS = {"post": "Post-LN", "pre": "Pre-LN"}
SEEDS = (0, 1, 2)

language = MarkovLanguage(VOCAB, order=ORDER, branching=BRANCHING, seed=0)
base = language.baselines(SEQ_LEN)
print("reference losses, nats per token:")
for name, value in base.items():
    print(f"  {name:>8}: {value:.3f}")

# %% [markdown]
# ## 网格：放置方式 × 预热 × 学习率 { #the-grid-placement-warmup-learning-rate }


# %%
def make_model(norm_position: str, seed: int = 0, init: str = "xavier") -> GPT:
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=VOCAB,
        block_size=SEQ_LEN,
        n_layer=N_LAYER,
        n_head=N_HEAD,
        n_embd=N_EMBD,
        norm_position=norm_position,
    )
    model = GPT(config)
    if init == "xavier":  # W_q, W_k, W_v as one (3C, C) matrix: see Settings
        xavier_init_(model, qkv="fused")
    return model


def run(norm_position, lr, warmup, seed=0, init="xavier"):
    return train_lm(
        make_model(norm_position, seed, init),
        language,
        STEPS,
        lr,
        warmup_steps=warmup,
        decay="cosine",
        batch_size=BATCH,
        seq_len=SEQ_LEN,
        seed=seed,
    )


post, pre = make_model("post"), make_model("pre")
qkv_post = post.stack.layers[0].attn.sublayer.qkv.weight
qkv_pre = pre.stack.layers[0].attn.sublayer.qkv.weight
same = torch.equal(qkv_post, qkv_pre)
print("Post-LN and Pre-LN start from the same weights:", same)

runs = {}
for speed, lr in LRS.items():
    for warmup in WARMUPS:
        for pos in PLACEMENTS:
            runs[pos, warmup, speed] = run(pos, lr, warmup)

print(
    f"\n{'lr':>14} {'warmup':>6} {'placement':>9} {'final loss':>10} "
    f"{'steps to bigram':>15}  verdict"
)
for (pos, warmup, speed), r in runs.items():
    reached = first_step_below(r.losses, base["bigram"])
    reached = "never" if reached is None else reached
    print(
        f"{speed:>8} {LRS[speed]:.0e} {warmup:>6} {PLACEMENTS[pos]:>9} "
        f"{r.final_loss:>10.3f} {reached:>15}  {outcome(r, base)}"
    )

# %% [markdown]
# “Steps to bigram”（降到 bigram 的步数）是最近 10 个损失的均值首次低于 bigram
# 损失的那一步：从这一步起，模型开始通过注意力利用往前数第二个词元。

# %% alt="训练损失随步数的变化：Post-LN 与 Pre-LN，两个峰值学习率，无预热与有预热"
fig, axes = plt.subplots(
    2,
    2,
    figsize=(11, 7),
    sharex=True,
    sharey=True,
    constrained_layout=True,
)
colors = {"post": "tab:red", "pre": "tab:blue"}
steps = torch.arange(STEPS)
for row, speed in enumerate(LRS):
    for col, warmup in enumerate(WARMUPS):
        ax = axes[row, col]
        for pos, label in PLACEMENTS.items():
            losses = torch.tensor(runs[pos, warmup, speed].losses)
            smooth = losses.unfold(0, 10, 1).mean(-1)  # mean of 10 steps
            ax.plot(steps, losses, color=colors[pos], alpha=0.25, lw=0.8)
            ax.plot(steps[9:], smooth, color=colors[pos], lw=2, label=label)
        for name, style in (
            ("uniform", "-"),
            ("unigram", "--"),
            ("bigram", "-."),
            ("optimal", ":"),
        ):
            ax.axhline(base[name], color="gray", ls=style, lw=1, label=name)
        if warmup:
            ax.axvline(warmup, color="black", lw=0.8, alpha=0.5)
        ax.set_title(f"peak lr {LRS[speed]:.0e} ({speed}), warmup {warmup} steps")
        ax.set_ylim(0.7, 4.7)
        ax.grid(alpha=0.3, which="both")
for ax in axes[1]:
    ax.set_xlabel("step")
for ax in axes[:, 0]:
    ax.set_ylabel("training loss (nats per token)")
axes[0, 0].legend(loc="upper right", fontsize=8)
fig.suptitle(
    "Post-LN vs Pre-LN, 4 layers, Xavier init "
    "(thin: each step; thick: mean of 10; vertical line: end of warmup)"
)
plt.show()

# %% [markdown]
# ## 随机种子：决定性的一对，重复三次 { #seeds-the-deciding-pair-three-times }
#
# 决定这个问题的是高学习率、无预热的情形。用种子 1 和 2
# 把这两次运行再做一遍（每次都是新的初始化和新的批次）；种子 0 就是上面那次运行。

# %%
decisive = {pos: [runs[pos, 0, "high"]] for pos in PLACEMENTS}
for seed in SEEDS[1:]:
    for pos in PLACEMENTS:
        decisive[pos].append(run(pos, LRS["high"], 0, seed=seed))


def seed_cells(results):
    cells = [f"{r.final_loss:.3f} ({outcome(r, base)})" for r in results]
    return "  ".join(f"seed {s}: {cell}" for s, cell in enumerate(cells))


for pos, label in PLACEMENTS.items():
    print(f"{label}, lr {LRS['high']:.0e}, no warmup -> {seed_cells(decisive[pos])}")
post_failed = sum(outcome(r, base) != "trained" for r in decisive["post"])
pre_trained = sum(outcome(r, base) == "trained" for r in decisive["pre"])
print(
    f"Post-LN failed in {post_failed} of 3 seeds;",
    f"Pre-LN trained in {pre_trained} of 3",
)

# %% [markdown]
# ## 换用 GPT-2 初始化的同一对运行 { #the-same-pair-with-gpt-2s-initialization }
#
# `GPT` 按 GPT-2 的方式初始化：权重和嵌入取 N(0, 0.02)，写入残差流的投影再缩小为原来的
# $1/\sqrt{2L}$。在这个宽度下，它的权重比 Xavier 初始化的小得多（先打印出来）。
# 再跑一遍决定性的那一对，种子 0、1 和 2，不做 Xavier 重新初始化：

# %%
for init in ("xavier", "gpt2"):
    mlp = make_model("post", init=init).stack.layers[0].mlp.sublayer
    fc_std, proj_std = mlp.fc.weight.std(), mlp.proj.weight.std()
    print(
        f"{init:>6} init: weight std of the FFN's first layer {fc_std:.3f}, "
        f"of its output projection {proj_std:.4f}"
    )
gpt2_init = {}
for pos in PLACEMENTS:
    gpt2_init[pos] = [run(pos, LRS["high"], 0, seed, init="gpt2") for seed in SEEDS]
for pos, label in PLACEMENTS.items():
    cells = seed_cells(gpt2_init[pos])
    print(f"GPT-2 init, {label}, lr {LRS['high']:.0e}, no warmup -> {cells}")
gpt2_post_trained = sum(outcome(r, base) == "trained" for r in gpt2_init["post"])
gpt2_pre_trained = sum(outcome(r, base) == "trained" for r in gpt2_init["pre"])
pairs = zip(gpt2_init["post"], gpt2_init["pre"], strict=True)
gpt2_post_lower = sum(p.final_loss < q.final_loss for p, q in pairs)
print(
    f"Post-LN trained in {gpt2_post_trained} of 3 seeds, "
    f"Pre-LN in {gpt2_pre_trained} of 3; "
    f"Post-LN ended below Pre-LN in {gpt2_post_lower} of 3"
)

# %% [markdown]
# ## 结论 { #verdict }
#
# 由上面的运行计算得出：先是主要结论，然后是对其他论断的检验。

# %%
hi = LRS["high"]


def steps_to_bigram(r):
    reached = first_step_below(r.losses, base["bigram"])
    return STEPS if reached is None else reached  # never: count it as the whole run


p0, q0 = runs["post", 0, "high"], runs["pre", 0, "high"]
p1, q1 = runs["post", WARMUPS[1], "high"], runs["pre", WARMUPS[1], "high"]
if post_failed == 3 and pre_trained == 3:
    verdict = (
        f"With Xavier initialization at peak lr {hi:.0e} without warmup, Post-LN "
        "failed in 3 of 3 seeds "
        f"(seed 0: {outcome(p0, base)}, final loss {p0.final_loss:.2f}, "
        f"unigram {base['unigram']:.2f}) while Pre-LN trained in 3 of 3 "
        f"(seed 0: final loss {q0.final_loss:.2f}); with {WARMUPS[1]} warmup steps "
        f"Post-LN {outcome(p1, base)} (final loss {p1.final_loss:.2f})."
    )
else:
    verdict = (
        f"Not shown at this scale: with Xavier initialization at peak lr {hi:.0e} "
        "without warmup, Post-LN "
        f"failed in {post_failed} of 3 seeds and Pre-LN trained in {pre_trained} "
        "of 3."
    )
print(verdict)

moderate = [runs[pos, w, "moderate"] for pos in PLACEMENTS for w in WARMUPS]
moderate_ok = all(outcome(r, base) == "trained" for r in moderate)
spread = max(r.final_loss for r in moderate) - min(r.final_loss for r in moderate)
print(
    f"Every run at the moderate lr {LRS['moderate']:.0e} trained: {moderate_ok}; "
    f"their final losses span {spread:.2f} nats"
)
print(
    f"Warmup lowered Pre-LN's final loss at lr {hi:.0e}: "
    f"{q1.final_loss < q0.final_loss} "
    f"({q0.final_loss:.2f} without, {q1.final_loss:.2f} with)"
)
g_post, g_pre = gpt2_init["post"][0], gpt2_init["pre"][0]
gpt2_verdict = (
    f"With GPT-2's initialization at peak lr {hi:.0e} without warmup, Post-LN "
    f"trained in {gpt2_post_trained} of 3 seeds and Pre-LN in {gpt2_pre_trained} "
    f"of 3; Post-LN's final loss was below Pre-LN's in {gpt2_post_lower} of 3 "
    f"(seed 0: {g_post.final_loss:.2f} vs {g_pre.final_loss:.2f})."
)
print(gpt2_verdict)
faster = sum(
    steps_to_bigram(runs["pre", w, speed]) < steps_to_bigram(runs["post", w, speed])
    for speed in LRS
    for w in WARMUPS
)
print(f"Pre-LN got below the bigram loss sooner than Post-LN in {faster} of 4 settings")

# %%
results = {
    "moderate_lr": f"{LRS['moderate']:.0e}",
    "high_lr": f"{hi:.0e}",
    "warmup_steps": str(WARMUPS[1]),
    "unigram_loss": f"{base['unigram']:.2f}",
    "optimal_loss": f"{base['optimal']:.2f}",
}
for (pos, warmup, speed), r in runs.items():
    key = f"{pos}_{'warmup' if warmup else 'no_warmup'}_{speed}_lr_final_loss"
    results[key] = f"{r.final_loss:.2f}"
results["post_no_warmup_high_lr_failed_seeds"] = f"{post_failed}/3"
results["pre_no_warmup_high_lr_trained_seeds"] = f"{pre_trained}/3"
results["gpt2_init_post_no_warmup_high_lr_final_loss"] = f"{g_post.final_loss:.2f}"
results["gpt2_init_pre_no_warmup_high_lr_final_loss"] = f"{g_pre.final_loss:.2f}"
results["gpt2_init_post_no_warmup_high_lr_trained_seeds"] = f"{gpt2_post_trained}/3"
results["gpt2_init_post_below_pre_seeds"] = f"{gpt2_post_lower}/3"
results["verdict"] = verdict
results["gpt2_init_verdict"] = gpt2_verdict
display(
    {
        "application/vnd.resnorm.results+json": results,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in results.items()),
    },
    raw=True,
)

# %% [markdown]
# ## 观察结果 { #what-we-saw }
#
# 上面的结论行给出了具体数字；用文字来说：
#
# - **在高学习率、无预热时**，Xavier 初始化的 Post-LN 在最初几步学会了词元频率；
#   在画出来的那次运行中，它短暂下探之后又回到 unigram 线并停在那里；三个种子最终都停在那里，
#   损失也从未变成 NaN。在这个规模上，失败的表现不是爆炸，而是模型停止学习。Pre-LN
#   从相同的权重出发、在相同的批次上训练，却能离开 unigram 线，一直降到 bigram
#   线附近，也就是注意力开始派上用场的地方。这正是 Xiong 等人 §3.2 和 §4
#   中的规律，只是模型小得多。
# - **预热能挽救 Post-LN**：在高学习率下，有了 50 步预热，它就能离开 unigram
#   线，不过在这么短的训练中，它仍落后于同样预热的 Pre-LN。
# - **在中等学习率下**，无论有没有预热，每次运行都能训练，
#   四个最终损失彼此接近（跨度已在上面打印）。放置方式只在学习率高时才起作用。
# - **Pre-LN 同样能从预热中获益**（在高学习率下）。“Pre-LN 不需要预热”在这里成立的意思是：
#   没有预热它也能训练，而不是说预热毫无用处；大型 Pre-LN 模型仍然会做预热（LLaMA：2,000
#   步，Touvron et al. 2023, [arXiv 2302.13971](https://arxiv.org/abs/2302.13971), §2.3）。
# - **初始化和放置方式同样重要。** 换用 GPT-2 的小初始化后，决定性的那一对运行结果就不一样了（上面
#   GPT-2 的结论行给出了三个种子的计数）：高学习率、无预热的 Post-LN
#   能够训练，而且最终损失可能**低于** Pre-LN。要出现失败，权重需要达到 Xavier
#   的量级，前期探索中也是如此，而且那时还需要更宽的模型。两个结果出自同一次 notebook
#   运行，读者应当把它们放在一起权衡：在这个规模上，Post-LN 是否需要预热取决于初始化。
# - **源文章的论断**，在这个规模上的检验结果：“Post-LN 需要预热”在高学习率、Xavier
#   初始化时成立，在中等学习率下或使用 GPT-2 初始化时都不成立。“Pre-LN
#   可以使用更大的学习率”也只在同样狭窄的意义上成立：用 Xavier 初始化时，高学习率、无预热能训练
#   Pre-LN，却训练不了 Post-LN；用 GPT-2 初始化时两者都能训练。“Pre-LN 收敛更快”：上面的“steps to
#   bigram”一列和计数给出了这些运行中的答案。“0–500 步预热”这个数字说的是大模型，
#   玩具规模的运行无法证实它。
#
# 这个模型只有 4 层、64 个特征，训练 150 步。在 Xiong
# 等人的分析中，两种放置方式之间的差距随深度扩大，因为 Pre-LN 最后一层的梯度按 $1/\sqrt{L}$
# 缩小，而 Post-LN 的不会（§3.3）；本页没有测试更深的模型。初始化时的梯度本身，
# 见[初始化时的梯度范数](../gradients_at_init/)。
#
# ## 参考资料 { #sources }
#
# - Xiong et al. 2020, *On Layer Normalization in the Transformer Architecture*,
#   [arXiv 2002.04745](https://arxiv.org/abs/2002.04745)：§3.2（预热研究），§3.3（定理
#   1），§4（不用预热的 Pre-LN，BERT）。
# - Vaswani et al. 2017, [arXiv 1706.03762](https://arxiv.org/abs/1706.03762), §5.3（Adam
#   β = (0.9, 0.98)，先预热，再按平方根倒数衰减）。
# - Glorot & Bengio 2010, *Understanding the difficulty of training deep feedforward neural
#   networks*（Xavier 初始化）。
# - Radford et al. 2019（GPT-2 技术报告），§2.3（残差层的初始权重按 $1/\sqrt{N}$ 缩放）。
# - Touvron et al. 2023 (LLaMA), [arXiv 2302.13971](https://arxiv.org/abs/2302.13971), §2.3。
# - 代码：`snippets/lm_experiment.py`（数据、学习率调度、训练循环、结论判定、初始化），
#   `snippets/transformer.py`（模型）。
