# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from warmup.py.
#   # 代码单元格特意留空：构建时逐个取自 warmup.py。
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
# 用两种归一化位置训练同一个小型 GPT 语言模型，分别在有/无预热、中等/高学习率下各跑一遍，
# 数据是代码自己生成的一种合成语言（不下载任何东西）。每次构建网站都会执行本页，
# 下面的每个数字都由那次运行打印出来。
#
# ## 预期 { #what-we-expected }
#
# - **Post-LN 需要预热**。Xiong 等人 2020 年（[arXiv 2002.04745](https://arxiv.org/abs/2002.04745)，§3.2）用 Adam（β = (0.9, 0.98)）在
#   IWSLT14 De-En 上训练一个 6 + 6 层的 Post-LN Transformer：不预热只能达到 8.45 BLEU，预热则约为 34；
#   预热 500 步时，峰值学习率 5e-4 能达到 31.16 BLEU，1e-3 却只有 2.77。学习率越高，预热就越重要。
# - **原因**，按 Xiong 等人的解释（§3.3，定理 1）：初始化时，Post-LN 最后几层的梯度不随深度缩小，
#   用满学习率时最初几次更新的幅度就会很大，预热则让它们保持较小。这个论证针对的是**初始化时**的模型，
#   所以初始化方式本身也是实验设置的一部分。它与其他几种解释如何对上，见
#   [为什么 Pre-LN 训练更稳定](../../placement/pre-ln/#why-pre-ln-trains-more-stably)。
# - **Pre-LN 不预热也能训练**（§4）：在 IWSLT14 上，学习率 5e-4、不预热时约为 34 BLEU；在 BERT
#   上，预热 10k 步、学习率 1e-4 的 Post-LN 把学习率提高到 3e-4 就发散了，而 Pre-LN
#   在这个学习率下不预热也能训练。
# - **这几篇文章还说**（指本手册所依据的五篇中文文章，见[论断核查表](../claims/)），“许多实践表明 Pre-LN 可直接使用较大学习率并把 warm-up 步数缩短到 0-500”[B]，
#   而且 Pre-LN“收敛更快”[D]。较大学习率这一条就是上面 Xiong 等人的 BERT 结果；0–500
#   步这个数字则没有找到出处（见 [Pre-LN](../../placement/pre-ln/) 一页中关于预热论断的一节）。至于收敛速度，Xiong 等人报告，在 IWSLT14 上 Pre-LN 第 9 个 epoch 的结果就与 Post-LN 第 15 个 epoch
#   相当（§4）。下面会在小得多的规模上逐一检验这三条。
#
# ## 设置 { #settings }
#
# - **数据**：`snippets/lm_experiment.py` 中的 `MarkovLanguage`：一个定义在 16
#   个词元（token）上的随机稀疏二阶马尔可夫链；每一对前序词元只允许 3 个后继词元，概率随机（种子
#   0）。要预测得好，就得用到往前数第二个词元，因此模型必须学会利用注意力。
#   每一步都抽取新的批次（从不重复使用），种子相同的模型看到的批次也相同。马尔可夫链是已知的，
#   所以最优损失可以精确算出；另有三个参照点（在下面打印）：`uniform`（ln
#   16，相当于什么都不知道的模型）、`unigram`（只用词元频率）、`bigram`（只看前一个词元，
#   不需要注意力）。
# - **模型**：`snippets/transformer.py` 中的 `GPT`：4 层，`n_embd` 64，4 个头，`block_size`
#   16，LayerNorm，不用随机失活（dropout），`norm_position` 取 "post" 或 "pre"（Pre-LN
#   带最终归一化）。**重新初始化**：每个 `nn.Linear` 的权重都取 Xavier 正态分布（`torch.nn.init.xavier_normal_`），
#   语言模型头（LM head）也不例外，它与词元嵌入权重共享（weight tying）；所有偏置为零；位置嵌入保留 `GPT` 的
#   N(0, 0.02)。融合的查询/键/值权重（$3d \times d$）
#   作为一个矩阵整体初始化（`xavier_init_(model, qkv="fused")`，与 PyTorch 的
#   `nn.MultiheadAttention` 对其 `in_proj_weight` 的做法相同），因此 $W_q$、$W_k$、$W_v$
#   的权重比分成三个独立的 $d \times d$ 矩阵初始化时小 $\sqrt{2}$
#   倍；后者是[初始化时的梯度范数](../gradients_at_init/)和[深度与残差流](../depth/)两个实验的设置。种子相同时，
#   两种归一化位置从相同的权重出发。`GPT` 默认使用的 GPT-2 初始化放在最后尝试，因为它会改变结论。
# - **训练**：Adam，β = (0.9, 0.98)，无权重衰减，无梯度裁剪；共 150 步，每步 32 条序列、每条 16
#   个词元；线性预热 0 步或 50 步，之后余弦衰减到 0；峰值学习率 2e-3（中等）或 1e-2（高）。由 8
#   次运行组成的网格使用模型种子和数据种子 0；起决定作用的那两次运行，则在两种初始化下各用种子
#   0、1、2 跑一遍。“最终损失”是最后 20 步训练损失的平均值。
# - **结论用语**：“diverged”（发散）指损失出现非有限值，或最终损失高于 ln 16；“no better than
#   unigram”（不比 unigram 好）指最终损失高于 unigram 损失减去 0.1 nats（模型只学到了词元频率，
#   别的什么都没学到）；其余情况为“trained”（训练成功）。
# - **单个 CPU 线程**（`torch.set_num_threads(1)`）：这么小的模型，每个运算都很小；
#   在我们的测试中，当其他程序同时占用 CPU 核心时，把运算拆到多个线程上会让训练慢得多；
#   单线程能让运行时间保持稳定。
#
# **这些设置是怎么选出来的**。在写这一页之前，我们在页面之外手动试过（这些运行不在本页重复）：4
# 层和 6 层；32、48 和 64 的特征宽度；每批 16、24 和 32 条序列，每条 16 或 32 个词元；120、150 和
# 200 步；预热后保持常数或余弦衰减；30 到 60 步的预热；从 1e-3 到 1e-2 的峰值学习率；8、16 和 32
# 个词元的词表；Xavier 初始化和 GPT-2 初始化；种子 0 到 2。当时看到的情况，用文字概括如下：Xavier
# 初始化的 Post-LN 在高学习率、无预热时会停滞，4 层和 6 层都是如此；宽度为 64
# 时每个种子都停滞，宽度为 48 时部分或全部种子停滞，宽度为 32 时没有一个种子停滞（定理 1
# 的上界随宽度 $d$ 增长）；学习率在 1e-3 到 3e-3 之间时，每次运行都能训练；词表只有 8
# 个词元时，Post-LN 在 1e-2 下即使预热 30 步也会停滞，而 32 个词元又太难，几百步之内学不好；使用
# GPT-2 初始化时，高学习率、无预热要么对两种归一化位置都有害（6
# 层，常数学习率），要么两者都不停滞（4 层，余弦衰减）。本页的网格是既能放进页面的时间预算、
# 又能展示这一效应的最省的一组；最后几次运行展示的则是会把这一效应掩盖掉的初始化方式。

# %%

# %% [markdown]
# ## 网格：归一化位置 × 预热 × 学习率 { #the-grid-placement-warmup-learning-rate }


# %%

# %% [markdown]
# “Steps to bigram”（降到 bigram 的步数）是最近 10 个损失的均值首次低于 bigram
# 损失的那一步：从这一步起，模型开始通过注意力利用往前数第二个词元。

# %% alt="训练损失随步数的变化：Post-LN 与 Pre-LN，两个峰值学习率，无预热与有预热"

# %% [markdown]
# ## 随机种子：关键对照换三个种子 { #seeds-the-deciding-pair-three-times }
#
# 决定这个问题的是高学习率、无预热的情形。用种子 1 和 2
# 把这两次运行再做一遍（每次都是新的初始化和新的批次）；种子 0 就是上面那次运行。

# %%

# %% [markdown]
# ## 换用 GPT-2 初始化，再做这组对照 { #the-same-pair-with-gpt-2s-initialization }
#
# `GPT` 按 GPT-2 的方式初始化：权重和嵌入取 N(0, 0.02)，写入残差流的投影再缩小为原来的
# $1/\sqrt{2L}$。在这个宽度下，它的权重比 Xavier 初始化的小得多（先打印出来）。
# 下面不做 Xavier 重新初始化，用种子 0、1 和 2 把这组关键对照再跑一遍：

# %%

# %% [markdown]
# ## 结论 { #verdict }
#
# 由上面的运行计算得出：先是主要结论，然后是对其他论断的检验。

# %%

# %%

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# 上面的结论行给出了具体数字；用文字来说：
#
# - **在高学习率、无预热时**，Xavier 初始化的 Post-LN 在最初几步学会了词元频率；
#   在画出来的那次运行中，它短暂下探之后又回到 unigram 线并停在那里；三个种子最终都停在那里，
#   损失也从未变成 NaN。在这个规模上，失败的表现不是爆炸，而是模型不再学习。Pre-LN
#   从相同的权重出发、在相同的批次上训练，却能离开 unigram 线，一直降到 bigram
#   线附近，也就是注意力开始派上用场的地方。这正是 Xiong 等人 §3.2 和 §4
#   中的规律，只是模型小得多。
# - **预热能挽救 Post-LN**：在高学习率下，有了 50 步预热，它就能离开 unigram
#   线，不过在这么短的训练中，它仍落后于同样预热的 Pre-LN。
# - **在中等学习率下**，无论有没有预热，每次运行都能训练，
#   四个最终损失彼此接近（跨度已在上面打印）。归一化位置只在学习率高时才起作用。
# - **Pre-LN 同样能从预热中获益**（在高学习率下）。Pre-LN“不需要学习率预热”[D]，在这里成立的意思是：
#   没有预热它也能训练，而不是说预热毫无用处；大型 Pre-LN 模型仍然会做预热（LLaMA：2,000
#   步，Touvron et al. 2023，[arXiv 2302.13971](https://arxiv.org/abs/2302.13971)，§2.3）。
# - **初始化和归一化位置同样重要**。换用 GPT-2 的小初始化后，这组关键对照的结果就不一样了（上面
#   GPT-2 的结论行给出了三个种子的计数）：高学习率、无预热的 Post-LN
#   能够训练，而且最终损失可能**低于** Pre-LN。要出现失败，权重需要达到 Xavier
#   的量级，前期探索中也是如此，而且那时还需要更宽的模型。两个结果出自同一次 notebook
#   运行，读者应当把它们放在一起权衡：在这个规模上，Post-LN 是否需要预热取决于初始化（它与论文如何对上，见[为什么 Pre-LN 训练更稳定](../../placement/pre-ln/#why-pre-ln-trains-more-stably)）。
# - **这几篇文章的论断**，在这个规模上的检验结果：Post-LN“需要预热”[D]，在高学习率、Xavier
#   初始化时成立，在中等学习率下或使用 GPT-2 初始化时都不成立。Pre-LN“可以使用更大的学习率”[D]，也只在同样狭窄的意义上成立：用 Xavier 初始化时，高学习率、无预热能训练
#   Pre-LN，却训练不了 Post-LN；用 GPT-2 初始化时两者都能训练。Pre-LN“收敛更快”[D]：上面的“steps to
#   bigram”一列和计数给出了这些运行中的答案。0–500 步预热这个数字说的是大模型，
#   玩具规模的运行无法证实它。
#
# 这个模型只有 4 层、64 个特征，训练 150 步。在 Xiong
# 等人的分析中，两种归一化位置之间的差距随深度扩大，因为 Pre-LN 最后一层的梯度按 $1/\sqrt{L}$
# 缩小，而 Post-LN 的不会（§3.3）；本页没有测试更深的模型。初始化时的梯度本身，
# 见[初始化时的梯度范数](../gradients_at_init/)。
#
# ## 参考来源 { #sources }
#
# - Xiong et al. 2020，*On Layer Normalization in the Transformer Architecture*，[arXiv 2002.04745](https://arxiv.org/abs/2002.04745)：§3.2（预热研究），§3.3（定理
#   1），§4（不用预热的 Pre-LN，BERT）。
# - Vaswani et al. 2017，[arXiv 1706.03762](https://arxiv.org/abs/1706.03762)，§5.3（Adam
#   β =（0.9, 0.98），先预热，再按平方根倒数衰减）。
# - Glorot & Bengio 2010，*Understanding the difficulty of training deep feedforward neural
#   networks*（Xavier 初始化）。
# - Radford et al. 2019（GPT-2 技术报告），§2.3（残差层的初始权重按 $1/\sqrt{N}$ 缩放）。
# - Touvron et al. 2023（LLaMA），[arXiv 2302.13971](https://arxiv.org/abs/2302.13971)，§2.3。
# - 代码：`snippets/lm_experiment.py`（数据、学习率调度、训练循环、结论判定、初始化），`snippets/transformer.py`（模型）。
