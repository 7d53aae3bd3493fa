# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from memory.py.
#   # 代码单元格特意留空：构建时逐个取自 memory.py。
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 内存：Pre-LN 能节省训练显存吗？ { #memory-does-pre-ln-save-training-memory }
#
# 本手册参考的五篇中文文章中，有一篇说：把层归一化（LayerNorm）
# 挪到子层前面（即[前置层归一化（Pre-LN）](../../placement/pre-ln/)），训练时的峰值显存还能再降
# 5–10 %，理由是 LayerNorm 之前的激活值不必为反向传播保留下来；那一节的标题甚至说的是推理显存。
# 文章没有给出任何出处，我们也没能找到。另一篇则说，两种归一化位置的内存占用相同。本实验取两个只有
# `norm_position` 不同的模型，一个 Pre-LN，一个[后置层归一化（Post-LN）](../../placement/post-ln/)，
# 逐个张量地清点一个训练步为反向传播保留了什么，并测量整个训练步的峰值内存。
#
# ## 预期 { #what-we-expected }
#
# - **“激活值”指什么**。Korthikanti 等人 2022 年（arXiv 2205.05198，§4）把它定义为：
#   前向传播中创建、反向传播又要用到的每一个张量，参数和优化器状态除外。autograd（自动求导）
#   保留的恰好就是这些张量，而 `torch.autograd.graph.saved_tensors_hooks`
#   能在每个张量被保存时看到它。
# - **LayerNorm 不论放在哪里，都要保留自己的输入**。$y = (x - \mu)/\sigma$ 对 $x$ 的梯度需要用到
#   $x$（或 $\hat{x}$）和 $\sigma$；PyTorch 的 LayerNorm
#   会保存它的输入，以及均值和标准差的倒数（下面第一个单元格会验证这一点）。Korthikanti 等人（§4.1）给一层中的两个 LayerNorm 各记上其输入，即 $s \cdot b \cdot h$
#   个元素，他们的计数里没有任何一项取决于归一化放在哪里。在 Pre-LN 中，这个输入是残差流 $x$；在
#   Post-LN 中则是和 $x + F(x)$。两种情况下都是一个形状相同的张量，所以那条说法给出的机制根本不存在。
# - **有一处差别对 Pre-LN 不利**。Pre-LN 网络在最后一层之后还需要一个归一化（GPT-2
#   报告，§2.3），Korthikanti 等人（§4.3）把这个最后的层归一化（论文中写作“last layer-norm”）算作额外的激活值显存。Post-LN
#   网络不需要这样的归一化（手册中的 `Stack` 没有加；PyTorch 的 `nn.Transformer` 却照样加了一个，见
#   pytorch issues #50086 和 #74092）。因此我们预期：每层的字节数相同，Pre-LN 的总量略大一些。
#
# ## 设置 { #settings }
#
# - 模型：`snippets/resnorm.py` 中的 `Stack` 和
#   `GPT`（见[统一的子层连接](../../placement/sublayer-connection/)）；Pre-LN 模型与 Post-LN 模型只有
#   `norm_position` 不同。作为对照，也统计了三明治形式（Peri-LN，每个子层两个归一化）。归一化层：LayerNorm 和[均方根归一化（RMSNorm）](../../foundations/rmsnorm/)。因果注意力，激活函数为 GELU
#   的 MLP，$d_\text{ff} = 4\,d_\text{model}$，随机失活（dropout）概率为 0，精度为 float32。
# - 保存的字节数：4 层的网络，批大小 4，三种规模
#   $(d_\text{model}, \text{头数}, \text{序列长度}) =$
#   (64, 4, 64)、(128, 4, 128)、(256, 8, 256)；输入需要梯度，就像可训练的嵌入层的输出那样。
#   每个模型和输入都使用种子 0。
# - 计数规则：在一次前向传播中，把 autograd 保存的每个张量映射到它的存储（storage）；
#   一块存储不管有多少个被保存的张量指向它（视图、reshape
#   的结果、被两个算子保存的同一个张量），都只按其全部字节计一次，并记到最先保存它的最内层模块名下。
#   参数和缓冲区不计入。小张量（LayerNorm 的均值和 $1/\sigma$、因果掩码）计入；Korthikanti 等人
#   没有把它们算进去。
# - 峰值内存：一个 GPT（词表大小 256，4 层，$d_\text{model}$ 为 128，4 个头，序列长度 128，批大小
#   8，种子 0），一步 = 前向传播、交叉熵损失、反向传播，事先把梯度设为 `None`。在 CPU
#   上，由性能分析器（`profile_memory=True`）记录 PyTorch CPU
#   分配器的每一次分配和释放，峰值取累计量的最大值（内存）；在 CUDA 上则用
#   `torch.cuda.max_memory_allocated`（显存）。两者报告的都是超出该步开始时已分配量的字节数。
#   没有采用常驻集大小（RSS）：它还会把 Python 自身占用的内存，以及分配器已经释放、
#   却尚未归还给系统的内存都算进去。
# - 只用一个 CPU 线程（`torch.set_num_threads(1)`）：哪些张量被保存、被分配与线程数无关，
#   而在其他进程争抢 CPU 核心时，单线程能让这些小运算依然跑得很快。
#
# 代码见 `snippets/activation_memory.py`：

# %%

# %% [markdown]
# `result1` 和 `result2` 是均值和 $1/\sigma$，每个词元（token）一个数；weight 和 bias
# 是参数。所以无论放在哪里，LayerNorm 都会为反向传播保留自己的输入。RMSNorm
# 同样保留输入。如果它的输出来自 `MulBackward0` 节点，就说明 PyTorch
# 是用一串逐元素运算（平方、求均值、平方根倒数、两次乘法）算出它的，而不是用一个融合内核（fused kernel），
# 每个运算各自保留自己反向传播所需的东西：这里是输入、$1/\mathrm{RMS}$ 和归一化后的向量，比
# LayerNorm 多出一个与输入同样大小的张量。
#
# ## 按层、按归一化位置统计 { #per-layer-per-placement }
#
# 对 4 层网络的每一层做同样的统计，取中间那种规模，字节数记在保存它们的模块名下。
# 层以外的部分（Pre-LN 和三明治形式的最终归一化）单独列出。

# %%

# %% [markdown]
# 一层的字节都花在了哪里，按保存它们的模块类型分开统计（“MultiHeadAttention”指注意力的核心部分：Q、K、V、softmax 的输出和因果掩码；“Linear”指四个线性层的输入）：

# %% alt="一层为反向传播保存的 MiB 数：按模块、按归一化位置，分 LayerNorm 与 RMSNorm"

# %% [markdown]
# ## 与 Korthikanti 等人的计数对照 { #against-korthikanti-et-als-count }
#
# 对于带随机失活的 16 位激活值，他们的式 (1)（§4.1）给出每层 $s b h (34 + 5as/h)$
# 字节。去掉随机失活（既没有掩码，也没有随机失活的输出）并改用 float32 后，同样这些张量共
# $4\,(16\,sbh + a s^2 b)$ 字节，即
# `korthikanti_bytes_per_layer(..., bytes_per_element=4, dropout=False)`。实测的 LayerNorm
# 各层应当只比它多出论文略去的那些小张量。

# %%

# %% [markdown]
# ## 整个网络：Pre/Post 比值 { #whole-stacks-the-prepost-ratio }
#
# 如果 Pre-LN 能节省 5–10 %，那么它保存的字节数与 Post-LN 之比应当落在 0.90 到 0.95 之间。

# %% alt="保存字节数之比 Pre-LN / Post-LN：按网络规模与归一化类型，对照文章所称的 5-10 % 节省"

# %% [markdown]
# ## 完整训练步：GPT 的保存量与峰值内存 { #a-whole-training-step-gpt-saved-bytes-and-peak-memory }
#
# 两个模型的嵌入层、语言模型头（LM head）和交叉熵完全相同；Pre-LN 的 GPT 带有最终归一化。


# %%

# %% [markdown]
# ## 每个子层多一个归一化的代价 { #what-a-second-norm-per-sublayer-costs }
#
# 在每个子层前后都放归一化（`norm_position="sandwich"`，即 Peri-LN 采用的布局），相当于在
# Pre-LN 对子层输入的归一化之外，再对每个子层的输出做一次归一化。
# 决策页的[归一化的位置](../../reference/choosing/#placement)一节用公式估算了每层这两个额外归一化的代价；这里把同一个
# GPT 按两种方式各建一次，实际测量多出的参数、一个训练步为反向传播保留的字节数，以及在构建本页的
# CPU 上一个训练步（前向加反向）的墙钟时间。计时沿用[让归一化更快](../norm_speed/)一页的规则：
# 两种训练步交错计时 31 轮（每轮按打乱的顺序各跑一次，这样后台负载会同样落在两者身上），报告比值的
# 中位数和由四分位数得出的范围；只有两者的四分位距互不重叠，也就是比值的范围不含 1 时，才算测出了差别。

# %%

# %% [markdown]
# 推理时，无论归一化放在哪里，都不会为反向传播保留任何东西：

# %%

# %% [markdown]
# ## 大模型的规模下 { #at-a-large-models-size }
#
# 按 Korthikanti 等人自己的计数：各层共 $L \cdot sbh(34 + 5as/h)$
# 字节（不考虑并行时的式 (5)），最终归一化在此基础上再增加 $2sbh$ 字节（§4.3）。对于
# GPT-3 175B，他们给出 $a = 96$、$s = 2048$、$h = 12288$（§5）以及 $L = 96$（表 3）：

# %%

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# - 逐层来看，Pre-LN 网络和 Post-LN 网络为反向传播保留的字节数完全相同，用 LayerNorm 还是 RMSNorm
#   都一样：两种归一化位置下，一层中的两个归一化都保留了各自的输入，其余被保存的张量也完全一样。
#   那条说法给出的机制（“不必保留 LayerNorm 前的大量激活以做反向梯度”[B]）是错的：在 Pre-LN
#   中，归一化的输入就是残差流，它照样被保留了下来。
# - 唯一的差别是 Pre-LN 的最终归一化，所以一个完整的 Pre-LN 模型保留的反而*多*一点，绝不会少
#   5–10 %；完整训练步的峰值之差恰好等于额外保存的那些张量的字节数。
#   多出来的只是一个与单层输入同样大小的张量，而对比的是整个网络的激活值，所以层数越多、层越宽，
#   它的占比就越小；按论文自己的计数，到了 GPT-3 的规模，它可以忽略不计。
# - LayerNorm 各层与 Korthikanti 等人式 (1) 中的张量吻合，
#   只差论文略去的逐词元小统计量和因果掩码。
# - 这里 RMSNorm 保留的比 LayerNorm 多，原因是在这个 PyTorch 版本的 CPU
#   上，它由一串逐元素运算拼成，而不是一个融合内核，每个运算都各自保存输入。
#   这是实现方式带来的开销，在两种归一化位置下都一样。只有当归一化位置改变了归一化的*数量*时，
#   保存量才会随之改变：三明治形式每个子层有两个归一化，保留的明显更多。
# - 在每个子层的输出上再加一个归一化（三明治形式，即 Peri-LN 的布局），代价有三项：它的权重（用
#   RMSNorm 时每层 $2d$ 个参数，用 LayerNorm 时 $4d$ 个），它为反向传播保留的字节数（见上面打印的
#   三明治 / Pre 比值），以及打印在旁边的训练步时间；只有当时间比值的范围不含 1 时，才算有差别。
#   在这么小的宽度下，归一化在一个训练步中所占的比例比在大模型中更大：大模型的时间花在矩阵乘法上，
#   每个词元的计算量随 $d^2$ 增长，而归一化只随 $d$ 增长。
# - 推理时根本不会为反向传播保存任何东西，所以这条说法对推理显存同样不成立。

# %%

# %%
