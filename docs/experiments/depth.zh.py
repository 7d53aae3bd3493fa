# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from depth.py.
#   # 代码单元格特意留空：构建时逐个取自 depth.py。
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 深度与残差流 { #depth-and-the-residual-stream }
#
# 关于深层网络，这里有两个问题。第一，初始化时，在不同的归一化位置下，残差流会逐层增长到多大？
# 第二，在一个固定的学习率下、不做学习率预热（warmup），哪些归一化位置在 6
# 层、24 层和 48 层时仍然能训练？模型是本手册的 `Stack` 和 `GPT`（`snippets/resnorm.py`），
# 探针代码在 `snippets/depth_probe.py` 中。每次构建网站都会执行本页，
# 下面的每个数字都来自那次运行。
#
# ## 预期 { #what-we-expected }
#
# - **后置层归一化**（Post-LN）在每个子层的末尾都做一次层归一化（LayerNorm），因此无论深度如何，
#   层与层之间的残差流都保持固定的尺度（Xiong 等人 2020，arXiv 2002.04745，§3.3，引理 2）。
# - **前置层归一化**（Pre-LN）不对残差和做归一化。在论文的简化设置下，引理 2
#   给出了它的上下界：$(1 + \tfrac{l}{2})\,d \le \mathbb{E}\|x_l\|^2 \le (1 + \tfrac{3l}{2})\,d$，
#   即随层序号 $l$ 线性增长（见 [Pre-LN](../../placement/pre-ln/#the-residual-stream-grows)）。
#   引理中的常数只适用于它自己的设置；宽度、激活函数或初始化不同的网络，增长速度可能不同。
# - **Peri-LN**（Kim 等人 2025，arXiv 2502.02732）对每个分支的输入和输出都做归一化，即
#   $x + \mathrm{Norm}(F(\mathrm{Norm}(x)))$（`norm_position="sandwich"`），CogView 的三明治层归一化（Sandwich-LN）用的也是这种块（Ding 等人 2021，arXiv 2105.13290）。这样每个分支加上的都是一个大小固定的向量，所以残差流应当仍然线性增长，
#   只是斜率由归一化决定，而不是由权重决定。Kim 等人声称，在**训练过程中**（模型最大到 32 亿
#   参数），Peri-LN 的方差增长比 Pre-LN 更均衡，梯度也更平稳；本页不检验这一点。
# - **LayerNorm Scaling**（层归一化缩放；Sun 等人 2025，*The Curse of Depth*，arXiv 2502.05795）把第 $l$ 层归一化的输出乘以 $1/\sqrt{l}$（`norm_position="lns"`），
#   让深层加入的量更少，因此残差流应当比 Pre-LN 增长得慢。Sun 等人在摘要中称，Pre-LN
#   的输出方差随深度呈指数增长，使得深层的块接近恒等映射。
# - **可训练性**。Post-LN 需要学习率预热（Xiong 等人，§3.2）；DeepNet 的 DeepNorm（Wang 等人
#   2022，arXiv 2203.00555）保留 Post-LN 的结构，把残差乘以 $\alpha = (2N)^{1/4}$
#   以加大其权重，把初始化按 $\beta = (8N)^{-1/4}$ 缩放，训练了 1,000
#   层的模型；ReZero（Bachlechner 等人 2020，arXiv 2003.04887）去掉了归一化，让每个分支从权重 0
#   开始，训练了 120 层的 Transformer。在 Xiong 等人的实验中，Pre-LN 不用预热也能训练（§4）。
#   几种归一化位置为什么表现不同，统一放在
#   [为什么 Pre-LN 训练更稳定](../../placement/pre-ln/#why-pre-ln-trains-more-stably)一节讨论。
# - **这几篇文章怎么说**（指本手册所依据的五篇中文文章，见[论断核查表](../claims/)）。它们正确地指出，Pre-LN 只对进入各子层的输入做归一化；
#   但它们还说 Pre-LN 残差和的方差“相对稳定”[D]，说 Post-LN 训练深层网络“困难（>24层）”[D]，而 Pre-LN“可以训练100+层的网络”[D]，并且把 Sandwich-LN 写成 $\mathrm{LN}(x + F(\mathrm{LN}(x)))$。
#   方差稳定的说法与引理 2 相矛盾，下面会实际测量；关于深度的说法在一个小设置下用 6、24 和 48
#   层来检验；而那个 Sandwich-LN 公式并不是 CogView 的：CogView 的代码（THUDM/CogView
#   `mpu/sparse_transformer.py`）是把 $\mathrm{LN}(F(\mathrm{LN}(x)))$ 加到未经归一化的 $x$ 上。
#
# ## 设置 { #settings }
#
# **第 1 部分：初始化时的残差流**。对 post、pre、sandwich 和 lns 这几种 `norm_position`，使用
# `Stack(24, d_model=64, n_heads=4, d_ff=256, activation="relu", final_norm=False)`；每个
# `nn.Linear` 都重新初始化为 Xavier 正态分布，偏置为零（即 `snippets/lm_experiment.py` 中的
# `xavier_init_(stack, qkv="per_projection")`：$W_q$、$W_k$、$W_v$ 各自作为一个独立的方阵，
# 与论文中的写法以及 Xiong 等人分析时的处理一致），与[初始化时的梯度范数](../gradients_at_init/)一页相同；
# 输入为单位方差的高斯向量，批大小 8，序列长度 32；随机种子 0–4；不计算梯度。测量的量：
# 每一层之后的 $\mathbb{E}\|x_l\|^2/d$，先对词元（token）取平均，再给出各种子上的均值和离散程度。
#
# **第 2 部分：可训练性**。`GPT(vocab_size=16, block_size=16, n_embd=32, n_head=2, n_layer=L, norm_position=P)`，使用
# GELU，不用随机失活（dropout），$L \in \{6, 24, 48\}$，$P$ 取 post、pre、deepnorm 和
# rezero。各个块中 `nn.Linear` 的权重与第 1 部分一样重新做 Xavier 初始化，只有 DeepNorm
# 例外：它保留 DeepNet 自己按 $\beta$ 缩放的 Xavier 初始化（由 `GPT`
# 施加）；嵌入和与之权重共享（weight tying）的输出层保留 GPT-2 的 $\mathcal{N}(0, 0.02)$。任务、
# 训练器和结论用语都与[预热与学习率](../warmup/)一页相同，均来自 `snippets/lm_experiment.py`：
#
# - 任务：`MarkovLanguage(vocab_size=16, order=1, branching=2, seed=0)`，
#   序列来自一条随机马尔可夫链，其中每个词元有两个可能的后继，概率随机；每个窗口从链走过 16
#   步之后才开始。模型只需要看前一个词元。参照损失根据这条链精确算出，并在下面打印：`unigram`，
#   即忽略前面词元的模型所能达到的最好损失；`optimal`，即任何模型所能达到的最好损失。
# - 训练（`train_lm`）：Adam，学习率 $10^{-3}$，从第一步起保持不变（无预热，无梯度裁剪），betas
#   为 (0.9, 0.98)，共 60 步，每步 8 条新序列、每条 16 个词元；模型和数据都用种子
#   0，每个（归一化位置，深度）组合只运行一次。最终损失：在训练批次之后抽取的 64 条留出序列上计算。
# - 结论（对留出集损失调用 `outcome`）：“diverged”（发散）指损失出现非有限值，或训练损失最终高于
#   $\ln 16$；“no better than unigram”（不比 unigram 好）指留出集损失高于 unigram 损失减去 0.1
#   nats（模型只学到了词元频率，别的什么都没学到）；其余情况为“trained”（训练成功）。
#
# 学习率是在任何运行之前就定好的，没有调过；步数由本页允许的构建时间决定。
#
# 单个 CPU 线程（`torch.set_num_threads(1)`）：这些张量太小，算子内部的多线程带不来好处；
# 单线程也让构建在共享机器上保持快速。

# %%

# %% [markdown]
# ## 第 1 部分：初始化时的残差流 { #part-1-the-residual-stream-at-initialization }
#
# 每一层 $l$ 之后的 $\mathbb{E}\|x_l\|^2/d$（$l = 0$ 为输入），阴影部分是引理 2 给 Pre-LN
# 的区间。这个区间只供对照：它是在引理的设置下证明的，并不针对这里的网络。

# %% alt="初始化时 E‖xₗ‖²/d 随层 l 的变化：Post-LN、Pre-LN、Peri-LN、LN Scaling 与引理 2 的区间"

# %% [markdown]
# 实测的 Pre-LN 曲线相对于这个区间落在哪里？每一层又加了多少？在 Xavier 权重、$d_{ff} = 4d$
# 的条件下，一个输入经过归一化的 ReLU 前馈分支，在期望意义上每个坐标会加上
# $d_{ff}\cdot\frac{2}{d + d_{ff}}\cdot
# \frac{1}{2}\cdot d\cdot\frac{2}{d + d_{ff}} = \frac{2\,d\,d_{ff}}{(d + d_{ff})^2}$，
# 下面把它和引理中每层 $\tfrac12$ 的下界斜率放在一起计算。
# 当各词元相互独立时，注意力加得很少（它对各词元的值向量求平均）；词元变得相似以后就加得多了，
# 而在这个网络中，词元恰恰会随深度变得相似；[初始化时的梯度范数](../gradients_at_init/#a-loss-whose-gradient-depends-on-the-output)一页打印了词元之间的余弦相似度。

# %%

# %% [markdown]
# ## 第 2 部分：不同深度下的可训练性 { #part-2-trainability-at-depth }
#
# 每个（归一化位置，深度）组合都从零开始训练一次，学习率、步数和数据都相同。点线分别是均匀猜测的
# $\ln 16$、unigram 损失（不看前面词元时的最好损失）和最优损失。

# %%

# %% alt=["各深度、各归一化位置下训练损失随步数的变化", "各归一化位置下留出集损失随深度的变化"]

# %%

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# 上面的表格就是结果；请对照它们阅读：
#
# - **Pre-LN 的残差流随深度增长，Post-LN 的则不会**。Post-LN 在每一层都保持在归一化的尺度上。Pre-LN 的残差流一层接一层地增长，所以这几篇文章说方差“相对稳定”[D]，这在初始化时并不成立；而引理 2
#   所描绘的残差流不断增长的图景是成立的。曲线相对于区间的位置已在上面打印：
#   最初几层略低于区间（如前面计算的那样，$d_{ff} = 4d$ 时，Xavier
#   初始化的前馈分支加上的量小于引理的下界斜率），而每层的增量随深度上升，
#   上面打印的指数 $k$ 说明了残差流增长得有多快：线性增长对应 $k = 1$，区间整个落在 1 之上，就是比线性更快。这种上升与词元随深度变得相似（梯度实验中测得）相吻合：
#   词元彼此相似以后，注意力对值向量求平均就不再会把幅度平均掉了。这个区间是针对一种简化的层证明的，
#   不是针对这里的层。
# - **在初始化时，Peri-LN 比 Pre-LN 增长得快，LayerNorm Scaling 则慢得多**。
#   对每个分支的输出做归一化，使每个子层加上的都是一个大小等于归一化尺度、与权重无关的向量，所以
#   Peri-LN 的残差流稳定增长；Kim 等人的论断针对的是训练过程，这一部分并不测量。LayerNorm Scaling
#   缩小了深层加入的量，这正是 Sun 等人的用意。Sun 等人在摘要中说 Pre-LN
#   的输出方差随深度呈指数增长；而在这里，在初始化时、24 层以内，增长可以用 $l$
#   的幂函数来拟合（见上面的 $k$）。更深的网络或训练过程中增长是否会变成指数式（他们的论断可能针对这些情形），
#   本页没有检验。
# - **可训练性**。结论行说明了哪些运行发散了、哪些最终不比 unigram
#   好、哪些训练成功。在这个设置下，Post-LN 在 6 层时能训练，在 24 层和 48
#   层时则停滞不前：它的留出集损失停在 unigram 损失上，也就是忽略前面词元的模型所能达到的最好损失。
#   它并没有发散。这与[初始化时的梯度范数](../gradients_at_init/)一页的结果一致：那里用的是非因果、更宽的网络，
#   初始化时就测到，深层 Post-LN 网络顶部的各词元几乎完全相同，
#   因此网络的输出几乎不依赖于输入。Noci 等人 2022 年（arXiv 2206.03126）报告了 Post-LN Transformer
#   中同样的、随深度加剧的对齐现象，并发现它可能会阻碍训练；本页并不能证明它就是这里的原因（其他候选原因见[为什么 Pre-LN 训练更稳定](../../placement/pre-ln/#why-pre-ln-trains-more-stably)）。DeepNorm 在测试的每种深度下都能训练，Pre-LN 也是如此，不过在这个训练预算下，在 24 层和 48
#   层时，Pre-LN 缩小的差距不如 DeepNorm 多（各自的比例已打印）。ReZero
#   几乎没有动。它的每个分支都通过一个从 0 开始的 $\alpha$ 接入，而 Adam
#   每一步对一个权重的改变最多约为学习率的大小（Kingma & Ba 2015，arXiv 1412.6980，
#   §2.1）：打印出的 $|\alpha|$ 在以 $10^{-3}$ 训练 60
#   步后依然很小，所以各分支对嵌入的贡献仍然很少。这几篇文章说 Post-LN
#   训练深层网络“困难（>24层）”[D]，这与这一个设置相符；Pre-LN“可以训练100+层的网络”[D]则超出了本页检验的范围。
# - **结论能推广到多远**。这只是一个小设置，每次运行只用一个种子，以一个学习率、不用预热训练 60
#   步。换一个学习率、宽度、步数或初始化方式，结果都可能改变，而单个种子也显示不出结果的离散程度：
#   请把这张表看作在这里发生的情况，而不是对各种归一化位置的排名。
#
# ## 参考来源 { #sources }
#
# - Xiong et al. 2020，arXiv 2002.04745：§3.2（预热）、§3.3（引理 2）、§4。
# - Kim et al. 2025（Peri-LN），arXiv 2502.02732；Ding et al. 2021（CogView, Sandwich-LN），arXiv 2105.13290，代码见 THUDM/CogView `mpu/sparse_transformer.py`。
# - Sun et al. 2025，*The Curse of Depth in Large Language Models*，arXiv 2502.05795。
# - Wang et al. 2022（DeepNet），arXiv 2203.00555，$\alpha$ 和 $\beta$ 见图 2(b)。
# - Bachlechner et al. 2020（ReZero），arXiv 2003.04887。
# - Kingma & Ba 2015（Adam），arXiv 1412.6980，§2.1。
# - Noci et al. 2022，*Signal propagation in Transformers*，arXiv 2206.03126。
# - 代码：`snippets/depth_probe.py`（残差流探针）、`snippets/lm_experiment.py`（任务、训练器、`outcome` 和 `xavier_init_`）、`snippets/grad_norms.py`（`power_law_fit`）、`snippets/resnorm.py`（`Stack`、`GPT`），各自都有测试。

# %%
