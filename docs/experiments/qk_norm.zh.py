# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from qk_norm.py.
#   # 代码单元格特意留空：构建时逐个取自 qk_norm.py。
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 注意力 logit：QK 归一化与软上限 { #attention-logits-qk-norm-and-soft-capping }
#
# 学习率很高时，小型语言模型的注意力 logit 会不会无限制地增长？[注意力内部的归一化](../../placement/qk-norm/)一页讲了两种对策：对查询和键做归一化，以及给 logit 加软上限。它们能不能把这种增长压住？本 notebook 用本手册的小型因果 Transformer 做实验：不加 QK 归一化和加逐头 QK 归一化的模型，在中等学习率和高学习率下各训练一遍；加软上限的模型只在高学习率下训练；每种设置跑三个随机种子。数据是代码自己生成的合成语言（不下载任何东西），每一步都记录最大的注意力 logit。每次构建网站都会执行本页，下面的每个数字都由那次运行打印出来。
#
# ## 预期 { #what-we-expected }
#
# - **大规模训练中 logit 会增长**。Wortsman 等人 2023 年的论文（[arXiv 2309.14322](https://arxiv.org/abs/2309.14322)，摘要）把注意力层 logit 的增长列为训练不稳定的两个来源之一，这一现象此前由 Dehghani 等人 2023 年在 ViT-22B 上报告过（[arXiv 2302.05442](https://arxiv.org/abs/2302.05442)）。他们还写道，小模型在高学习率下训练时同样会出现这种增长，而大规模训练中用过的缓解手段在小模型上同样有效。logit 的定义是 $s_{ij} = q_i \cdot k_j / \sqrt{d}$，式中没有什么能阻止 $\|W_q\|$ 和 $\|W_k\|$ 变大，而 $s$ 随二者的乘积增长。
# - **QK 归一化给 logit 设了上界**。若对每个头的查询和键各做一次权重为 $\gamma_q$、$\gamma_k$ 的 RMSNorm，则无论输入和投影权重是什么，都有 $|s_{ij}| \le \sqrt{d}\,\|\gamma_q \odot \gamma_k\|_\infty$（推导见 [logit 的上界](../../placement/qk-norm/#the-bound-on-a-logit)）。logit 的增长速度不会超过归一化权重的增长速度。
# - **软上限限制的是 softmax 看到的值，而不是 logit 本身**。$c\tanh(s/c)$ 落在 $(-c, c)$ 之内（Gemma 2、Grok-1），但 $q$ 和 $k$ 本身仍然可以任意变大。
#
# ## 设置 { #settings }
#
# - **数据**：`snippets/lm_experiment.py` 中的 `MarkovLanguage`，与[预热与学习率](../warmup/)一页用的是同一种语言：定义在 16 个词元（token）上的随机稀疏二阶马尔可夫链，每一对前序词元只允许 3 个后继词元，概率随机（种子 0）。要预测得好，就得用到往前数第二个词元，所以模型必须用上注意力。每一步都抽取新的批次，种子相同的模型看到的批次也相同。参照损失（在下面打印）由马尔可夫链精确算出：`unigram`（只用词元频率）、`bigram`（只看前一个词元，用不着注意力）和 `optimal`（最优）。
# - **模型**：词元嵌入加位置嵌入，接 `snippets/resnorm.py` 中由 2 个块组成的因果 Pre-LN `Stack`（宽度 64，4 个头，每个头的维度 $d = 16$，即 $q\cdot k/\sqrt{d}$ 中的 $d$；前馈层 256；LayerNorm；不用随机失活（dropout）；末尾有最终 LayerNorm），再接一个与词元嵌入共享权重的输出层。这就是本手册的 `GPT`，只是多了 `GPT` 不往下传的注意力选项。初始化与 `GPT` 相同（即 GPT-2 的初始化）：权重和嵌入取 $\mathcal{N}(0, 0.02)$，偏置为零，写回残差流的投影取 $\mathcal{N}(0, 0.02/\sqrt{2L})$。三种变体只在注意力上不同：
#   - 不加 QK 归一化：$s = q\cdot k/\sqrt{d}$；
#   - QK 归一化：`qk_norm="head"`，对每个头的查询和键各做一次带可学习权重的 RMSNorm（Qwen3 的做法，权重初始为 1）；
#   - 软上限：`softcap=12`，即 $c\tanh(s/c)$，取 $c = 3\sqrt{d}$，与 Gemma 2 2B、Gemma 2 9B（头维度 256 时 $c = 50$，$50/\sqrt{256} \approx 3.1$）和 Grok-1（头维度 128 时 $c = 30$，$30/\sqrt{128} \approx 2.7$）的比例大致相当。
#
#   种子相同时，三种变体的投影权重初始值相同（下面会检查）。
# - **训练**（`train_lm`）：Adam，β = (0.9, 0.98)，无权重衰减，无梯度裁剪，不预热，学习率恒定为 $3\times10^{-3}$（中等）或 $3\times10^{-2}$（高）；软上限只在高学习率下训练（logit 低于 $c$ 时软上限几乎不起作用，而中等学习率下 logit 一直小于 $c$）。共 120 步，每步 16 条序列、每条 32 个词元；种子 0、1、2（模型和数据共用）。最终损失是最后 20 步训练损失的平均值；留出集损失取自训练批次之后抽取的 64 条序列。
# - **测量的量**：每个训练步中最大的注意力 logit $s_{ij}$（取软上限之前的值，范围是两层、所有头、整个批次以及因果掩码保留下来的位置 $j \le i$），由前向钩子（forward hook）根据每个注意力层的输入算出。对加软上限的模型，另外记录它的 softmax 实际看到的值 $c\tanh(\max s/c)$；对 QK 归一化，记录同一步中每一层的上界 $\sqrt{d}\,\|\gamma_q\odot\gamma_k\|_\infty$。
# - **单个 CPU 线程**（`torch.set_num_threads(1)`）：张量都很小，在共享的机器上，单线程能让运行时间保持稳定。
#
# **这些设置是怎么选出来的**。在写这一页之前，我们在页面之外试过（这些运行不在本页重复）：2 层、宽度 64；学习率 $3\times10^{-3}$、$10^{-2}$ 和 $3\times10^{-2}$；120、150 和 200 步；每批 8 条和 16 条序列；每条 16 个和 32 个词元；软上限 5 和 12；种子 0 到 2。当时看到的情况用文字概括如下：不加 QK 归一化时，最大 logit 在每个学习率下都会增长，$3\times10^{-3}$ 时涨到 10 到 20 左右，$10^{-2}$ 时涨到一百左右，$3\times10^{-2}$ 时涨到几千。加了 QK 归一化，它始终保持在 10 左右或更低；加软上限的模型，logit 的增长与不加时一样。本页的设置是在时间预算内能显示这些现象的最省的一组。

# %%

# %% [markdown]
# ## 模型与探针 { #the-model-and-the-probe }
#
# `SmallLM` 就是 `GPT`，只是把注意力选项传给了每一个块。`logits_of` 根据注意力层的输入，重新算出该层 softmax 在软上限之前收到的 logit；下面的检查把这些 logit 的 softmax 与该层自己算出的注意力权重作比较。`head_norm_bound` 就是那一页推导出的上界。

# %%

# %% [markdown]
# ## 训练 { #training }
#
# 每个（学习率、变体、种子）组合都从头训练一次。钩子在每一步记录两层中最大的 logit；对 QK 归一化，还记录每一层在这一步的最大 $|s_{ij}|$ 和该层的上界。

# %%

# %% [markdown]
# ## 训练过程中的最大 logit 与损失 { #the-largest-logit-and-the-loss-over-training }
#
# 曲线是三个种子的中位数，阴影带覆盖三个种子中最小到最大的值。logit 轴取对数刻度。对加软上限的模型，虚线是它的 softmax 实际看到的值 $c\tanh(\max s/c)$，实线是进入软上限（tanh）之前的原始 logit。

# %% alt="有无 QK 归一化和软上限时，最大注意力 logit 与训练损失随训练步数的变化"

# %% [markdown]
# ## 逐步检查上界 { #the-bound-checked-at-every-step }
#
# 对 QK 归一化的各次运行：在多少个（层，前向传播）组合中，logit 没有超出 $\sqrt{d}\,\|\gamma_q\odot\gamma_k\|_\infty$？归一化权重又把上界从初始的 $\sqrt{d} = 4$ 推高了多少？

# %%

# %%

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# 上面打印的各行给出了数字，这里用文字概括（下一个单元格会用本次运行逐条核对这些说法；如果重新运行后某一条不再成立，构建就会失败）：
#
# - **大规模训练中报告的 logit 增长，在这么小的模型上也出现了**。不加 QK 归一化时，最大 logit 起步时低于 0.5（GPT-2 的初始化很小），随后在训练中一路上升。中等学习率下它始终低于 10；高学习率下，它在前 40 步内就超过 100，到最后一步仍在 100 以上，每个种子都是如此。学习率提高到十倍，logit 变为原来的十倍以上（比值已在上面打印），与 Wortsman 等人对高学习率下小模型的描述一致。
# - **QK 归一化把 logit 稳定在 $\sqrt{d}$ 附近**。用了逐头 RMSNorm 后，最大 logit 一开始就在 2 到 $\sqrt{d} = 4$ 之间，而不是接近 0：不管权重多大，归一化从第一步起就把 $q$ 和 $k$ 的均方根定为 1。此后它变化的速度不会超过归一化权重 $\gamma_q\odot\gamma_k$，两种学习率下都低于 10；无论哪一步、哪一层、哪个种子，它都没有超出上界 $\sqrt{d}\,\|\gamma_q\odot\gamma_k\|_\infty$。
# - **软上限并不约束 logit 本身**。加软上限的模型，logit 的增长与不加时一样，只有 softmax 看到的值保持在 $c$ 以下。当某个 logit 远大于 $c$ 时，$c\tanh(s/c)$ 几乎是平的，它的梯度 $1 - \tanh^2(s/c)$ 接近 0，所以软上限同时也挡住了本可以把这个 logit 拉回来的梯度。
# - **在这里，损失并没有跟着 logit 走**。高学习率下，三种变体在 120 步内都没有降到 bigram 损失以下：没有一个模型学会利用往前数第二个词元，它们的最终损失彼此相差不到 0.1 nats。中等学习率下，两种变体都降到了 bigram 损失以下，各自在不同种子上的范围相互重叠。所以在这个规模和训练长度下，logit 增长确实存在，但限制损失的并不是它。大规模训练中报告的训练不稳定在这里没有重现；更长的训练和更大的模型，本页没有检验。

# %%

# %% [markdown]
# ## 参考来源 { #sources }
#
# - Wortsman et al. 2023，*Small-scale proxies for large-scale Transformer training instabilities*，[arXiv 2309.14322](https://arxiv.org/abs/2309.14322)，摘要。
# - Dehghani et al. 2023，*Scaling Vision Transformers to 22 Billion Parameters*，[arXiv 2302.05442](https://arxiv.org/abs/2302.05442)，此处依据 Wortsman 等人摘要中的引述。
# - Gemma 2：google/gemma_pytorch，提交 014acb7，`gemma/config.py`（`attn_logit_softcapping=50.0`、`head_dim=256`）和 `gemma/model.py`；Grok-1：xai-org/grok-1，提交 7050ed2，`model.py`（`30 * tanh(logits / 30)`）和 `run.py`（`key_size=128`）。
# - Qwen3 的逐头 QK 归一化：Hugging Face transformers 5.24.0，`models/qwen3/modeling_qwen3.py`（`Qwen3Attention`），`tests/snippets/test_resnorm.py` 检验了它与 `MultiHeadAttention(qk_norm="head")` 相等。
# - 代码：`snippets/resnorm.py`（`Stack`、`MultiHeadAttention`）、`snippets/lm_experiment.py`（`MarkovLanguage`、`train_lm`）。
