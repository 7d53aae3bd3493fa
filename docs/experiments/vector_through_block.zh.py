# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from vector_through_block.py.
#   # 代码单元格特意留空：构建时逐个取自 vector_through_block.py。
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 追踪一个向量穿过块的过程 { #a-vector-through-one-block }
#
# 一个子层连接到底会对单个词元（token）做些什么？本实验取一个含 8
# 个特征的向量，让它逐阶段穿过子层连接，
# 分别考察[后置层归一化（Post-LN）](../../placement/post-ln/)、[前置层归一化（Pre-LN）](../../placement/pre-ln/)和 [Peri-LN](../../placement/variants/)
# 的三明治形式，并把每个中间向量都画成柱状图。本手册参考的五篇中文文章（见[论断核查表](../claims/)）中，有一篇用交互式应用给出了
# Pre-Norm 与 Post-Norm 的同一幅图景；这里换成静态图：三种归一化位置共用同一个子层
# $F$，每个阶段旁边都打印出它的均值和标准差。交互版（[交互演示：追踪向量穿过子层连接](../vector_widget/)）直接在浏览器里运行，
# 用的正是这里 $d = 8$ 时的 $F$，提供五种归一化位置，也可以输入你自己的向量。
#
# ## 预期 { #what-we-expected }
#
# 记 $\mathrm{LN}$ 为层归一化（LayerNorm），$F$
# 为子层（见[统一的子层连接](../../placement/sublayer-connection/)）：
#
# | 归一化位置 | 输出 $y$ |
# |---|---|
# | Post-LN | $\mathrm{LN}\big(x + F(x)\big)$ |
# | Pre-LN | $x + F\big(\mathrm{LN}(x)\big)$ |
# | 三明治（Sandwich） | $x + \mathrm{LN}_2\Big(F\big(\mathrm{LN}_1(x)\big)\Big)$ |
#
# 各个阶段就是由内向外的各层嵌套表达式：以 Pre-LN 为例，依次是
# $x$、$\mathrm{LN}(x)$、$F(\mathrm{LN}(x))$ 和输出。
#
# - 刚初始化的 LayerNorm（权重为 1，偏置为 0）把任何向量都映射为均值 0、方差
#   $\sigma^2/(\sigma^2 + \varepsilon)$ 的向量，这个方差略小于 1（有偏方差，即除以 $d$；见
#   [LayerNorm](../../foundations/layer-norm/)；Ba 等人
#   2016，arXiv 1607.06450）。它对向量自身的偏移和尺度视而不见：给每个特征加上同一个 $a$、再乘以
#   $c > 0$，输出保持不变（至多相差 $\varepsilon$ 带来的影响）。
# - 因此，无论 $x$ 的尺度如何，Post-LN 的输出总是均值 0、标准差 1；Pre-LN 的输出则是 $x$
#   加上一个由归一化后的 $x$ 算出的更新量，所以保留了 $x$ 的尺度，而且 $x$
#   变大时更新量并不随之变大。块内没有任何环节会重新缩放残差流，Pre-LN
#   网络的隐藏状态正是因此才会随深度增长（Xiong 等人 2020，arXiv 2002.04745，引理 2：初始化时，
#   隐藏状态平方范数的期望随层号线性增长）。
# - 三明治形式把分支也归一化了：初始化时，它的更新量标准差为 1（CogView 的 Sandwich-LN，Ding 等人
#   2021，arXiv 2105.13290；Peri-LN，Kim 等人 2025，arXiv 2502.02732）。其中一篇文章把 Sandwich-LN
#   写成 $\mathrm{LN}(x + F(\mathrm{LN}(x)))$；而 CogView 的代码（THUDM/CogView
#   `mpu/sparse_transformer.py`）把第二个归一化放在分支上、残差求和之内，与上表一致。
#
# ## 设置 { #settings }
#
# - $x = 2 + 3z$，其中 $z \sim \mathcal{N}(0, I_8)$，随机种子为 0：共 8 个特征，中心偏离 0
#   且取值范围较宽，以便看清归一化的作用。
# - $F$：手册中的 `FeedForward(8, 32)`（Linear 8→32、GELU、Linear 32→8），采用 PyTorch
#   的默认初始化，种子为 1；所有归一化位置共用同一个 $F$。
# - 归一化层就是 `snippets/resnorm.py` 中 `Residual(F, 8, norm_position=...)`
#   创建的那些：`nn.LayerNorm(8)`，权重 1、偏置 0、$\varepsilon = 10^{-5}$，即初始化时的状态。
#   不使用随机失活（dropout），精度为 float32。
# - 后面的单元格会把 $x$ 按 $c \in \{0.1, 1, 10, 100\}$ 缩放，并输入只有 2 个特征的向量（种子 8）。
#
# 代码见 `snippets/vector_through_block.py`。

# %%

# %% [markdown]
# 把同样的数字画成柱状图：每个特征一组，每个阶段一根柱子。

# %% alt="一个向量的每个特征在 Post-LN、Pre-LN 与 Sandwich 连接各阶段的取值"

# %% [markdown]
# 下面把各阶段的标准差并排列出。每种归一化位置对词元的尺度做了什么，看这个数字就知道。

# %%

# %% [markdown]
# ## $x$ 的尺度 { #the-scale-of-x }
#
# 交互式应用允许读者自己输入 $x$，它能回答的问题是：$x$ 变大或变小时会怎样。这里把 $x$ 乘以
# $c$，对每种归一化位置打印输出的标准差，以及更新量的相对大小
# $\lVert y - c\,x \rVert / \lVert c\,x \rVert$（对 Post-LN 来说，$y - c\,x$
# 并不是加到残差流上的更新量，因为归一化会把整个结果重新缩放；列出它只是为了便于比较）。

# %% alt="‖update‖ / ‖c·x‖ 随输入尺度 c 的变化：Pre-LN 与 Sandwich，双对数坐标"

# %% [markdown]
# ## 两个特征，以及无偏标准差 { #two-features-and-the-unbiased-standard-deviation }
#
# 应用里的滑块最少可以调到 2 个特征。$d = 2$ 时，LayerNorm 几乎不剩什么自由度：中心化后的两个值是
# $\pm\delta/2$，标准差为 $|\delta|/2$，所以只要两个特征不相等，输出就是 $(+1, -1)$ 或
# $(-1, +1)$；两者很接近时，$\varepsilon$ 会把结果稍稍拉向
# 0。经过归一化之后，留下来的只有两个特征的大小顺序。

# %%

# %% [markdown]
# 要手工验证“标准差为 1”，就得像 LayerNorm 那样使用有偏估计。`torch.std`
# 默认给出的是无偏估计（除以 $d - 1$），在 $d = 8$ 时得到的是 $\sqrt{8/7}$ 而不是 1：

# %%

# %% [markdown]
# ## 文章里的算例：单位方差的 $x$，很大的 $F(x)$ { #the-articles-worked-example-unit-variance-x-large-fx }
#
# 其中一篇文章拿数字来论证：$x$ 的方差为 1，子层输出“可能方差很大，如10”[D]，于是
# $x + F(x)$ 的方差约为 10，Post-LN 的归一化必须把它缩放回 1；而在 Pre-LN
# 中，子层看到的是归一化后的输入，求和的结果“方差相对稳定”[D]。上面那个偏离中心、
# 取值范围又宽的单个向量并不是这种情形，所以检验不了这个说法。下面直接构造这种情形：4,096
# 个词元，每个 64 个特征，$x$ 的每个元素都取自 $\mathcal{N}(0, 1)$（种子 2）；再取一个新建的
# `FeedForward(64, 256)`（种子 3），把它的输出乘上一个常数，使 $F(x)$ 在这些词元上的方差恰好为
# 10。每个方差都在全部词元和特征上计算，并且和 LayerNorm 一样取有偏方差。归一化层是新建的
# `nn.LayerNorm(64)`。

# %%

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# - 每个经过归一化的阶段（$\mathrm{LN}(x)$、$\mathrm{LN}(x + F(x))$
#   以及三明治形式的两个归一化）在打印精度内都是均值 0、标准差 1。
# - Post-LN 的输出是归一化过的：标准差为 1，形状随 $x + F(x)$ 而定，后者的尺度则丢失了。Pre-LN
#   的输出保留了 $x$ 的偏移和尺度：块只是加上一个由归一化后的 $x$
#   算出的更新量，残差流本身在块内从未被归一化。所以 Pre-LN 网络的末尾还要再加一个归一化（GPT-2
#   在最后一个块之后加了一个，见其报告 §2.3）；交互式应用中那个单独的 Pre-Norm
#   块没有这个归一化，对单个块而言没有问题，但对整个网络就不对了。
# - 把 $x$ 乘以 $c$ 不会改变 Post-LN 输出的尺度；而 Pre-LN
#   的更新量大小不变，因此它在输出中所占的比重按 $1/c$ 成比例下降。在深层 Pre-LN
#   网络中，残差流随深度增长，于是越靠后的块对残差流的改变越小。三明治形式也呈现同样的下降；
#   它的更新量大小由第二个归一化固定下来。
# - 交互式应用只在自己生成 $x$ 时才设置随机种子。读者手动输入 $x$
#   时，块的权重是在未设种子的情况下随机抽取的；而应用每次有改动都会把整个脚本重新运行一遍，
#   每次重跑都会抽到新的权重：这时在 Pre-Norm 与 Post-Norm
#   之间来回切换，比较的其实是两个不同的子层。这里三种归一化位置共用一个设了种子的
#   $F$，并且每个最终阶段都与手册中的 `Residual` 核对过。
# - **文章里的算例**，在它自己设定的情形下实测：$x$ 方差为 1、分支方差为 10
#   时，和的方差接近两个方差之和（分支与 $x$ 几乎不相关），Post-LN 的归一化再把它拉回
#   1，与文章所说一致。但文章关于 Pre-LN 的说法在这个情形下并不成立：Pre-LN 输出的方差与 Post-LN
#   求和结果的方差相等（见上面打印比值的那一行），因为对一个本来就是单位方差的 $x$
#   做归一化几乎什么也没改变，而求和的结果没有经过任何归一化。Pre-LN
#   固定住的是分支*输入*的尺度，而不是残差流的尺度。


# %%
