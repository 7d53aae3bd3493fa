# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from gradients_at_init.py.
#   # 代码单元格特意留空：构建时逐个取自 gradients_at_init.py。
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 初始化时的梯度范数 { #gradient-norms-at-initialization }
#
# 一个刚初始化的 Transformer 网络，每一层能收到多大的梯度？
# 在[后置层归一化（Post-LN）](../../placement/post-ln/)
# 和[前置层归一化（Pre-LN）](../../placement/pre-ln/)中，这个梯度又如何随深度变化？
# 本页在手册自己的 `Stack` 上测量每一层第二个前馈权重 $W^{2,l}$ 的梯度，也就是 Xiong 等人 2020
# 年的定理 1 和图 3 所讨论的那个量。每次构建网站都会执行本页，下面的每个数字都来自那次运行。
#
# ## 预期 { #what-we-expected }
#
# - **定理 1**（Xiong 等人 2020，arXiv 2002.04745，§3.3）：初始化时，最后一层 $W^{2,L}$ 的梯度在
#   Post-LN 中以 $O(d\sqrt{\ln d})$ 为界，与深度 $L$ 无关；在 Pre-LN 中则以 $O(d\sqrt{\ln d / L})$
#   为界。在以 $L$ 为横轴的双对数坐标中，Post-LN 是一条水平线，Pre-LN 是一条斜率为 $-1/2$ 的直线。
# - **原因**（同一节，引理 2 和引理 3）：层归一化（LayerNorm）回传的梯度与其输入的
#   $\sqrt{d}/\|x\|$ 成正比。Post-LN 的最后一个归一化层看到的输入尺度是固定的；而 Pre-LN
#   的最终归一化看到的是整个残差和 $x_L$，其 $\mathbb{E}\|x_L\|^2$ 随 $L$ 线性增长。因此，Pre-LN
#   的梯度应当随 $1/\mathrm{rms}(x_L)$ 变化。这两个引理的表述见
#   [Post-LN](../../placement/post-ln/#what-xiong-et-al-proved-theorem-1-and-lemma-2) 一页。
# - **图 3**（§3.4；6-6 层的翻译模型，10 个随机种子）：在 Post-LN
#   中，前馈网络（FFN）权重的逐层梯度范数随层序号增大，在 Pre-LN 中则几乎持平；最后一层的梯度在
#   Post-LN 中从 6-6 到 14-14 的各种深度下大致不变，在 Pre-LN 中则随深度减小。
# - **Post-LN 的梯度会越往底层越小吗**？多篇论文报告过 Post-LN 较低层的梯度偏小：Xiong
#   等人的图 3（初始化时）、Liu 等人 2020 年的 Admin（arXiv 2004.08249，§3，出现在解码器中而非编码器中）、
#   Takase 等人（arXiv 2206.00330）和 Mix-LN（Li 等人 2024，arXiv 2412.13795）。但这是不是
#   Post-LN 难以训练的原因，仍有争议。本页只在自己的设置下测量初始化时的逐层梯度分布；这个结果与
#   Post-LN 不稳定的其他几种解释如何对上，统一放在
#   [为什么 Pre-LN 训练更稳定](../../placement/pre-ln/#why-pre-ln-trains-more-stably)一节讨论。
#
# ## 设置 { #settings }
#
# 结果取决于设置（初始化、输入、损失），因此下面尽可能沿用 Xiong 等人分析时的设置：
#
# - `Stack(L, d_model=64, n_heads=4, d_ff=256, activation="relu")`，编码器层（无因果掩码），
#   不用随机失活（dropout），$L \in \{6, 12, 18, 24\}$；`norm_position="post"`（没有最终归一化）和
#   `"pre"`（带最终归一化，由 `Stack` 自动加上）。
# - 每个 `nn.Linear` 都重新初始化：权重取 Xavier（Glorot）正态分布，偏置为零；$W_q$、$W_k$、$W_v$
#   各自作为一个独立的方阵初始化，与论文中的写法一致（即 `snippets/lm_experiment.py` 中的
#   `xavier_init_(stack, qkv="per_projection")`；若对融合后的 $3d \times d$ 矩阵整体做一次 Xavier
#   初始化，它们的权重会小 $\sqrt{2}$ 倍）；LayerNorm 的权重为 1，偏置为 0。激活函数用
#   ReLU，与原始 Transformer 的 FFN 相同（Vaswani 等人 2017，arXiv 1706.03762，§3.3）。
# - 输入：单位方差的高斯向量，批大小 8，序列长度 32。
# - **损失**。主实验：对随机目标的线性损失，$\mathcal{L} = \operatorname{mean}_t \langle y_t, \mathrm{out}_t\rangle$，$y_t \sim \mathcal{N}(0, I)$。它对网络输出的梯度就是 $y$ 本身，与网络算出了什么无关；因此，
#   不同深度、不同归一化位置之间的一切差异都来自网络如何把这个梯度向下传递，而这正是定理 1
#   所讨论的。对照：先乘一个固定的随机读出矩阵、再算均方误差，
#   即 $\operatorname{mean}(\mathrm{out}\,R - y)^2$，其中 $R \sim \mathcal{N}(0, 1/d)$，
#   它的梯度还与输出有关。
# - 随机种子 0–9（同时决定模型初始化和数据），报告各种子上的均值和标准差。梯度指
#   `layers[l].mlp.sublayer.proj.weight` 的 $\|\partial \mathcal{L}/\partial W^{2,l}\|_F$。
# - 单个 CPU 线程（`torch.set_num_threads(1)`）：这些张量太小，算子内部的多线程带不来好处；
#   单线程也让构建在共享机器上保持快速。

# %%

# %% [markdown]
# ## 逐层梯度（图 3 a、b） { #per-layer-gradients-figure-3-a-b }
#
# 6 层网络（图 3 的深度）和 24 层网络中，每一层 $l$ 的 $W^{2,l}$
# 的梯度；阴影带表示各随机种子之间的一个标准差。


# %% alt="初始化时 W²ˡ 的梯度范数随层 l 的变化：Post-LN 与 Pre-LN，浅层网络与深层网络各一个"

# %% [markdown]
# ## 最后一层梯度随深度的变化（图 3 c、d） { #the-last-layers-gradient-against-depth-figure-3-c-d }
#
# 每种深度下最后一层 $W^{2,L}$ 的梯度，并过第一个点画出定理 1 的两种标度关系：$c$（水平）和
# $c\sqrt{6/L}$（$\propto 1/\sqrt{L}$）。拟合 $c\,L^{p}$ 得到的指数 $p$
# 附有在各随机种子上用自助法（bootstrap）求得的 95% 区间。


# %% alt="最后一层 W² 的梯度范数随深度 L 的变化（线性损失），附水平参考线与 1/√L 参考线"

# %% [markdown]
# ## 机制：最终归一化 { #the-mechanism-the-final-norm }
#
# 引理 3 说，最终归一化会把回传的梯度大约除以 $\mathrm{rms}(x_L)$，即其输入的均方根。
# 如果这就是全部原因，那么随着 $L$ 增大，Pre-LN 的梯度乘以 $\mathrm{rms}(x_L)$ 应当保持不变，而
# $\mathrm{rms}(x_L)$ 本身不断增长。在 Post-LN 中，最后一层的输出是 LayerNorm 的输出，在任何深度下
# rms 都是 1。

# %%

# %% [markdown]
# ## 梯度依赖于输出的损失 { #a-loss-whose-gradient-depends-on-the-output }
#
# 用均方误差损失重做同样的扫描。它的梯度中有一部分，即 $2\,\mathrm{out}\,R R^\top / n$，
# 取决于网络输出了什么，因此也取决于输出的各个词元（token）彼此有多相似：
# 当一个序列中的词元指向同一方向时，这部分梯度在 $\sum_t g_t h_t^\top$
# 中会跨词元累加，而不是相互抵消。表中打印的是 $x_L$ 中同一序列内两个词元之间的平均余弦相似度。

# %% alt="最后一层 W² 的梯度范数随深度 L 的变化（MSE 损失），附水平参考线与 1/√L 参考线"

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# 上面的结论行是根据拟合结果计算出来的；请对照它们阅读：
#
# - **在本设置下、使用线性损失时，定理 1 成立**。Post-LN 最后一层的梯度不随深度变化，
#   并且在每种深度下都比 Pre-LN 的大，差距的倍数随 $L$ 增大。Pre-LN 的梯度随深度下降，在 6 到 24
#   层之间比 $1/\sqrt{L}$ 略快。机制表说明了原因：梯度乘以 $\mathrm{rms}(x_L)$
#   大致保持不变，所以梯度随 $1/\mathrm{rms}(x_L)$ 变化（引理 3），而在这个网络中 $x_L$ 的增长比
#   $\sqrt{L}$ 略快（见上面的 $q$；[深度与残差流](../depth/)一页逐层展示了残差流）。定理 1 中的
#   $1/\sqrt{L}$ 对应的是 $\mathbb{E}\|x_L\|^2$ 线性增长的情形（引理 2）。
# - **这里没有复现出图 3（a、b）**。在 Xiong 等人的测量中，Post-LN 的逐层梯度越往顶部越大，Pre-LN
#   的则几乎持平。而在这里，Post-LN 的梯度在各层之间大致持平，顶部略低（见上面的比值）；Pre-LN
#   的梯度则朝顶部急剧下降：它的较低层除了恒等路径传来的梯度，还会收到上方每个分支的贡献。Xiong
#   等人测的是翻译任务上的 6-6 层编码器-解码器；在编码器网络上用随机输入和随机目标是另一种设置，
#   本页无法判断究竟是哪一处差异在起作用（这留下了哪些问题，见
#   [为什么 Pre-LN 训练更稳定](../../placement/pre-ln/#why-pre-ln-trains-more-stably)）。
# - **在这些深度、这个设置下，没有出现梯度消失**。Post-LN 的梯度在向下传播时逐渐消失，
#   这种现象在这里 24 层、初始化时并没有出现：无论哪种归一化位置，
#   第一层的梯度都不比最后一层的小（见上面的比值）。这与上面提到的论文并不矛盾：Xiong 等人的图 3
#   测的是翻译数据上的 6-6 层编码器-解码器（见上一条），Admin 发现的梯度消失出现在解码器中，而
#   Admin 和 Mix-LN 考察的是训练过程中的模型，并不只看初始化时；
#   编码器网络上的随机输入不属于其中任何一种情形。
# - **损失函数很关键**。使用均方误差时，Post-LN 最后一层的梯度随深度增大，Pre-LN 的梯度则比
#   $1/\sqrt{L}$ 下降得慢。余弦相似度表说明了原因：随着深度增加，
#   一个序列中的词元变得几乎一模一样（Post-LN
#   中更明显），于是梯度中依赖输出的那一部分会跨词元累加。这就是秩坍缩（rank collapse）：Dong 等人
#   2021 年（arXiv 2103.03404）证明了没有跳跃连接的注意力会出现秩坍缩；Noci 等人 2022
#   年（arXiv 2206.03126）则表明，在初始化时，Post-LN Transformer
#   中的词元随深度增加而越来越趋于一致，并发现这可能会阻碍训练。定理 1
#   讨论的是网络如何把给定的输出梯度向下传递，而线性损失恰好把这一点单独分离了出来。
#
# ## 参考来源 { #sources }
#
# - Xiong et al. 2020，*On Layer Normalization in the Transformer Architecture*，arXiv 2002.04745：§3.3（引理 2、引理 3、定理 1）、§3.4（图 3）。
# - Liu et al. 2020（Admin），arXiv 2004.08249，§3（Post-LN 解码器中的梯度消失）。
# - Takase et al. 2023，*On Layer Normalizations and Residual Connections in Transformers*，arXiv 2206.00330。
# - Li, Yin, Liu 2024（Mix-LN），arXiv 2412.13795。
# - Vaswani et al. 2017, arXiv 1706.03762，§3.3（使用 ReLU 的前馈网络）。
# - Glorot & Bengio 2010，*Understanding the difficulty of training deep feedforward neural
#   networks*（Xavier 初始化）；PyTorch `torch.nn.init.xavier_normal_`。
# - Dong, Cordonnier, Loukas 2021, arXiv 2103.03404；Noci et al. 2022, arXiv 2206.03126。
# - 代码：`snippets/grad_norms.py`（探针）、`snippets/lm_experiment.py`（`xavier_init_`）和
#   `snippets/resnorm.py`（`Stack`），各自都有测试。

# %%
