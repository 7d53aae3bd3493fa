# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from residual_streams.py.
#   # 代码单元格特意留空：构建时逐个取自 residual_streams.py。
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 初始化时的多条残差流 { #residual-streams-at-initialization }
#
# 超连接（Hyper-Connections，HC）、流形约束超连接（mHC）、注意力残差（AttnRes）和 DenseFormer
# 改变的是子层输出传到后续各层的方式。本页要问的是，
# 它们各自对刚初始化的网络有什么影响：残差流逐层会变得多大，每一层得到多少梯度；对 HC 和 mHC
# 来说，还有混合各条流的矩阵沿深度连乘之后会怎样。模型是本手册的 `Stack(..., residual=...)`（`snippets/resnorm.py`）。每次构建网站都会执行本页，下面的每个数字都来自那次运行。
#
# ## 预期 { #what-we-expected }
#
# - **前置层归一化**（Pre-LN，`residual="add"`）不对残差和做归一化，残差和随深度增长：Xiong 等人
#   2020 年（arXiv 2002.04745，§3.3，引理 2）在他们的简化设置下把 $\mathbb{E}\|x_l\|^2$
#   限定在 $(1 + \tfrac{l}{2})\,d$ 与 $(1 + \tfrac{3l}{2})\,d$ 之间（见
#   [Pre-LN](../../placement/pre-ln/#the-residual-stream-grows)）；[深度与残差流](../depth/)一页
#   在这个网络上测量了这种增长。最后一层前馈权重的梯度随深度减小（定理 1，[初始化时的梯度范数](../gradients_at_init/)一页中有测量）。
# - **HC**（Zhu 等人 2024，arXiv 2409.19606）保留残差流的 $n$ 个副本。每个子层读取它们的加权和
#   （`pre`），把自己的输出按权重加到每个副本上（`post`），并用一个 $n \times n$ 矩阵（`comb`）
#   混合这些副本。§2.3 选择这种初始化，是为了让超连接的初始化等价于 Pre-Norm
#   残差连接：动态部分从 0 开始，混合矩阵从单位矩阵开始（式 (14)）。因此在初始化时，HC
#   的每条曲线都应当与 Pre-LN 的相同，混合矩阵的每个连乘积都应当是单位矩阵。
# - **HC 为什么可能爆炸**。Xie 等人（mHC，arXiv 2512.24880，§3.1）把子层 $l$ 的混合矩阵记作
#   $\mathcal{H}^{\mathrm{res}}_l$：从子层 $l$ 到顶层的信号要经过连乘积
#   $\prod_i \mathcal{H}^{\mathrm{res}}_i$，而对不受约束的矩阵来说，这个连乘积
#   “不可避免地偏离恒等映射”，于是信号“容易爆炸或消失”。他们的证据来自训练：一个 270 亿参数的模型（30 层，$n =
#   4$；表 5），其 HC 版本在第 1.2 万步左右出现损失突增（图 2），连乘积的 *Amax Gain
#   Magnitude*（最大增益幅值：前向取其行和绝对值的最大者，反向取列和绝对值的最大者，
#   并在一个序列的所有词元上取平均）峰值达到 3000（图 3 b）。CPU 上的构建无法训练这样的模型；
#   本页检查的是初始化，然后再看混合矩阵偏离单位矩阵一定程度后，沿深度会发生什么。
# - **mHC**（同一篇论文，§4.1–4.2）让混合矩阵的 logit 经过 Sinkhorn-Knopp 迭代，
#   于是每个混合矩阵都是双随机矩阵（元素非负，各行、各列之和都为 1）。这样的矩阵谱范数至多为
#   1，它们的乘积仍是双随机矩阵（§4.1），所以无论多深，连乘积都应当保持在 1 或以下。论文做 20
#   次 Sinkhorn 迭代，这只是近似：在训练好的 270 亿参数模型中，连乘积的增益最大约为 1.6，而 HC
#   接近 3000（§5.4）。本手册的 `HyperConnection(constrained=True)` 计算的内容与 Hugging Face
#   transformers 中 DeepSeek-V4 的代码相同（手册的测试对两者做了比对）。
# - **注意力残差**（Kimi Team 2026，arXiv 2603.15031）：在 Pre-LN 中，等权累加使隐藏状态随深度失控增长，
#   逐步稀释每一层的贡献（摘要），
#   §1 给出的增长量级是 $O(L)$。注意力残差给每个子层输入的是嵌入和此前所有子层输出的 softmax
#   加权平均（全量注意力残差，§3.1），每个子层有一个可学习的伪查询向量，并且所有伪查询向量都初始化为零，
#   使初始注意力权重在各来源层上均匀分布（§5）。
#   于是在初始化时，一个子层的输入就是 Pre-LN 的和除以来源的个数。其后紧跟一个归一化（这里是分支中的
#   LayerNorm），而归一化对整体缩放不敏感：我们预期各子层看到的与 Pre-LN 中相同，梯度也相同，
#   而混合出的表示比 Pre-LN 的残差流小得多。论文关于幅值受控的论断针对的是训练好的 480 亿参数
#   模型（摘要），本页不检验。
# - **DenseFormer**（Pagliardini 等人 2024，arXiv 2402.02622）在每个块之后加一个深度加权平均
#   （DWA），对嵌入和所有块的输出取加权平均。作者的代码把每个平均都初始化为恒等映射（epfml/DenseFormer，
#   提交 `c99a623`，`denseformer/denseformer.py` 中的
#   `DWAModules._init_weights`：所有权重为 0，最后一个为 1），本手册的 `DepthWeightedAverage`
#   也是如此：在初始化时，DenseFormer 应当与对应的 Pre-LN 网络完全相同。
#
# ## 设置 { #settings }
#
# - `Stack(L, d_model=64, n_heads=4, d_ff=256, residual=R, activation="relu")`，编码器层（无因果
#   掩码），不用随机失活（dropout），各分支按 Pre-LN 方式使用 LayerNorm，网络末尾带最终归一化；$L \in
#   \{8, 16, 32, 64\}$，$R$ 取 add、hc、mhc、attnres（全量注意力残差：每个子层一个来源）和
#   denseformer；HC 和 mHC 用 $n = 4$ 条流。
# - 每个 `nn.Linear` 都重新初始化为 Xavier 正态分布，偏置为零，$W_q$、$W_k$、$W_v$
#   各自作为一个独立的方阵（`snippets/lm_experiment.py` 中的
#   `xavier_init_(stack, qkv="per_projection")`），与深度实验和梯度实验相同。各种连接保留自己的初始化：HC
#   按 Zhu 等人的式 (14)；mHC 的投影为 $\mathcal{N}(0, 0.02^2)$、偏置 0、缩放 1，与 transformers
#   5.24.0 初始化 DeepSeek-V4 连接的方式相同（`DeepseekV4PreTrainedModel._init_weights`；mHC
#   论文自己的实验把门控因子初始化为 0.01，见表 5）；注意力残差的伪查询向量为 0；DenseFormer
#   的平均为恒等。
# - 输入：单位方差的高斯向量，批大小 4，序列长度 32；模型和数据用随机种子 0–2；
#   给出各种子上的均值和标准差。
# - **残差流**：第 $l$ 个块之后的 $\mathbb{E}\|x_l\|^2/d$（对批、词元和特征上的平方取平均；$l =
#   0$ 为输入，其值约为 1），其中 $x_l$ 是：add 取残差和；denseformer 取该块 DWA 的输出；hc 和
#   mhc 取 **$n$ 条流的均值** $\bar x_l = \frac1n \sum_k h_{l,k}$（各条流自身的均方一并打印）；attnres 取下一个块读取的深度加权混合（最后一个块之后，取送往最终归一化的混合）。*残差流增长*指 $\mathbb{E}\|x_L\|^2/d$ 除以它在 $l = 0$ 时的值。
# - **梯度**：每个块第二个前馈权重的 $\|\partial \mathcal{L}/\partial W^{2,l}\|_F$，损失为随机目标
#   $y_t \sim \mathcal{N}(0, I)$ 上的线性损失
#   $\mathcal{L} = \operatorname{mean}_t \langle y_t, \mathrm{out}_t\rangle$，$\mathrm{out}$
#   是网络经最终归一化后的输出：与[初始化时的梯度范数](../gradients_at_init/)一页的量和损失相同。
# - **混合矩阵的连乘积**。本手册的连接计算
#   $h'_k = \mathrm{post}_k\,F(x) + \sum_j \mathrm{comb}_{jk}\,h_j$，因此论文中的
#   $\mathcal{H}^{\mathrm{res}}$ 就是 $\mathrm{comb}^\top$。对每个词元，在前 $k$
#   个子层（每个块两个）上取
#   $P_k = \mathcal{H}^{\mathrm{res}}_k \cdots \mathcal{H}^{\mathrm{res}}_1$。报告的量：
#   它的谱范数（最大奇异值）；按 §3.1 定义、但逐词元计算的 Amax Gain Magnitude（行和绝对值的最大者与列和绝对值的最大者中较大的一个）；
#   两者都取批中所有词元上的最大值（运行了多个种子时也取种子上的最大值）；还有第二大和最小的奇异值。
# - **偏离单位矩阵（单独标注，不是任何论文用过的初始化）**。
#   为了看混合矩阵不再是单位矩阵之后连乘积会怎样，HC 的每个静态混合矩阵都替换为 $I + \sigma Z$，其中
#   $Z$ 是为每个子层重新抽取的标准高斯 $4 \times 4$ 矩阵，$\sigma \in \{0.02, 0.05, 0.1,
#   0.2\}$；mHC 则把每个混合 logit 的偏置替换为 $s Z$，$s \in \{1, 3, 10\}$。64 层，种子
#   0，不计算梯度。$\sigma$ 和 $s$ 只是可调的旋钮，不是在训练好的模型上测得的值。
# - 单个 CPU 线程（`torch.set_num_threads(1)`）：这些张量太小，算子内部的多线程带不来好处；
#   单线程也让构建在共享机器上保持快速。

# %%

# %% [markdown]
# ## 逐层看残差流 { #the-stream-layer-by-layer }
#
# 第一张图是 64 层网络中每个块之后的 $\mathbb{E}\|x_l\|^2/d$，纵轴为对数刻度（阴影带为各种子上的一个标准差）；
# 第二张图是最后一个块之后的值随深度 $L$ 的变化。曲线重合的地方，虚线和点线就落在实线上。

# %% alt="初始化时残差流均方随层的变化，64 层，每种残差拓扑各一条曲线"

# %% alt="最后一层之后残差流的均方随深度 L 的变化，每种残差拓扑各一条曲线"

# %%

# %% [markdown]
# ## 逐层看梯度 { #gradients-per-layer }
#
# 第一张图是 64 层网络中每个块 $l$ 的 $\|\partial \mathcal{L}/\partial W^{2,l}\|_F$；第二张图是最后一个块的梯度随深度
# $L$ 的变化，双对数坐标，附一条 $1/\sqrt{L}$ 参考线（定理 1 给 Pre-LN 的速率）。

# %% alt="初始化时 W² 的梯度范数随层的变化，64 层，每种残差拓扑各一条曲线"

# %% alt="最后一层 W² 的梯度范数随深度 L 的变化，每种拓扑各一条曲线，附 1/√L 参考线"

# %%

# %% [markdown]
# ## 混合矩阵的连乘积 { #the-product-of-the-mixing-matrices }
#
# 初始化时，逐词元计算：$P_k$ 在所有 $k$、词元和种子上的最大与最小谱范数、最大的 Amax Gain
# Magnitude，以及全部 $2L$ 个子层的连乘积的第二大奇异值。

# %%

# %% [markdown]
# ## 不受约束的 HC 会爆炸吗？ { #does-unconstrained-hc-blow-up }
#
# 初始化时 HC 的混合矩阵是单位矩阵，所以没有什么可以爆炸的（见上表）。问题在于它们不再是单位矩阵之后会怎样。
# 下面的运行手动改动这些矩阵（见设置：HC 用 $I + \sigma Z$，mHC 用随机 logit $s Z$），64
# 层，连乘 128 个混合矩阵。两张图依次是 $P_k$ 的谱范数随子层数 $k$ 的变化，以及 mHC 论文所用的
# Amax Gain Magnitude，纵轴均为对数刻度。

# %%

# %%

# %% alt="混合矩阵连乘积的谱范数随子层数 k 的变化，64 层：HC、扰动后的 HC、mHC"

# %% alt="混合矩阵连乘积的 Amax Gain Magnitude 随子层数 k 的变化：HC、扰动后的 HC、mHC"

# %%

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# 打印出的表格就是结果；请对照它们阅读：
#
# - **初始化时 HC 就是 Pre-LN，DenseFormer 也是**。它们的残差流和梯度与 Pre-LN
#   的一致，只差打印出的那一点（浮点舍入误差），这正是 Zhu 等人的式 (14) 和 DenseFormer
#   的恒等平均所要的；HC 的混合连乘积在每个深度都是单位矩阵（表中谱范数为 1）。因此，在这些规模下、
#   在初始化时，**不受约束的 HC 不会爆炸**：它此时与 Pre-LN 没有任何区别。mHC 论文报告的爆炸（Amax
#   峰值 3000，第 1.2 万步左右的损失突增）发生在一个 30 层、270 亿参数的模型的训练过程中；
#   本页既没有复现那个规模，也没有复现那样的训练。
# - **偏离单位矩阵会怎样**。手动改动混合矩阵之后，HC 的连乘积随深度增长，$\sigma$ 越大增长越快：在 128
#   个矩阵上，它的最大奇异值和 Amax 增益不断攀升，最小奇异值则不断下降，也就是说，各条流的某些组合被放大，
#   另一些则逐渐衰减。各条流自身跟着连乘积走：$\sigma$ 较大时，它们最终远高于 Pre-LN
#   的残差流（见“per-stream”一列），而它们的均值在 $\sigma$ 取最大值之前甚至可能低于 Pre-LN。
#   这正是 mHC 论文 §3.1 所说的机制；这里的 $\sigma$ 只是旋钮，所以这些数字说明的是小的偏离在 128
#   个矩阵上累积得有多快，而不是训练好的矩阵实际偏离多远。
# - **在 Sinkhorn 迭代的精度内，mHC 的连乘积保持在 1 或以下**。初始化时，它的最大谱范数和 Amax
#   增益都略低于 1（见表）。换成随机 logit 后，只要 logit 较小，它就仍保持在那里；logit 较大时，20 次
#   Sinkhorn 迭代得到的矩阵并不完全是双随机的，连乘积会略微超过 1（见打印的列表和数值）：
#   论文 §5.4 在训练好的 270 亿参数模型中看到的最大约 1.6，就是这种效应。
# - **mHC 一开始就在平均它的各条流**。初始化时，它的每个混合矩阵对各条流之间的任何差异，
#   至多传递打印出的那个比例（它的第二大奇异值），所以经过少数几个子层后，
#   连乘积在 float32 精度下就是秩一的（见打印的 $\sigma_2$）。各条流起初是副本，之后也几乎相等（见打印的差距），
#   而双随机的混合保持它们的均值不变：均值流随深度以大致与 Pre-LN 相同的速率增长（见指数），
#   最终也不比 Pre-LN 小（见打印的比值）。这个约束限制的是混合，而不是各子层加进来的量。
# - **注意力残差的混合随深度缩小，但各子层并不受影响**。每个子层读取的混合，就是 Pre-LN
#   的和除以来源的个数（见打印的核对），所以它的均方随深度下降，而 Pre-LN 的则上升。
#   分支中的归一化去掉了这个尺度：梯度与 Pre-LN 的一致，只差打印出的那一点；
#   把每个归一化的 $\varepsilon$ 设为 $10^{-12}$ 后，差别降到浮点舍入的量级，所以剩下的差别来自
#   $\varepsilon$。论文所说的幅值受控、梯度更均匀，是在训练之后测得的，本页不检验。
# - **梯度**。在初始化时，每种拓扑的逐层梯度都与 Pre-LN 的形态相同：最后一层的梯度随深度以打印出的速率下降，
#   接近定理 1 的 $1/\sqrt{L}$，而且前面几层得到的梯度比最后几层多（见打印的比值）。mHC
#   的梯度逐层看与 Pre-LN 有差别（见打印的最大差别），但趋势相同。
# - **没有做的：训练**。本页没有在本手册的马尔可夫语言（[预热与学习率](../warmup/)和[深度与残差流](../depth/)
#   两个实验所用的任务）上做训练对比。mHC 每个子层 20 次 Sinkhorn 迭代给每一步都增加了许多小运算，
#   每种拓扑用多个种子、在多个深度上训练，超出了本页允许的构建时间；而且 CPU 上的构建也无法达到
#   mHC 论文看到 HC 损失突增时的那几千步。
#
# ## 参考来源 { #sources }
#
# - Zhu et al. 2024（ICLR 2025），*Hyper-Connections*，arXiv 2409.19606：§2.3 与式 (14)（与 Pre-Norm 等价的初始化）。
# - Xie et al. 2025，*mHC: Manifold-Constrained Hyper-Connections*，arXiv 2512.24880
# （v2）：§3.1 及图 2、图 3（HC 的不稳定性，Amax Gain Magnitude）、§4.1（双随机矩阵：谱范数至多为
#   1，对乘法封闭）、§4.2（Sinkhorn-Knopp，20 次迭代）、§5.4（约 1.6 对比接近 3000）、表 5（270 亿参数模型）。
# - Kimi Team 2026，*Attention Residuals*，arXiv 2603.15031：摘要、§1、§3.1（全量注意力残差）、§5（伪查询向量初始化为零）。
# - Pagliardini et al. 2024，*DenseFormer*，arXiv 2402.02622；代码见 epfml/DenseFormer，提交
#   `c99a623`，`denseformer/denseformer.py`。
# - Xiong et al. 2020，arXiv 2002.04745：§3.3，引理 2 与定理 1。
# - Hugging Face transformers 5.24.0，`models/deepseek_v4/modeling_deepseek_v4.py`（`DeepseekV4HyperConnection`、`DeepseekV4PreTrainedModel._init_weights`）。
# - 代码：`snippets/resnorm.py`（`Stack`、`HyperConnection`、`sinkhorn_knopp`、`DepthAttention`、`DepthWeightedAverage`）、`snippets/lm_experiment.py`（`xavier_init_`）、`snippets/grad_norms.py`（`handbook_w2`、`linear_loss`、`power_law_fit`），各自都有测试。

# %%
