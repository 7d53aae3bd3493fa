# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from norm_speed.py.
#   # 代码单元格特意留空：构建时逐个取自 norm_speed.py。
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 让归一化更快 { #making-norms-fast }
#
# 一次层归一化（LayerNorm）或均方根归一化（RMSNorm）要花多长时间？离机器能做到的极限还有多远？本页让两种归一化各自的四种实现同场赛跑：本手册从零实现的模块（`snippets/layer_norm.py`、`snippets/rms_norm.py`），`nn.LayerNorm` / `nn.RMSNorm`，`F.layer_norm` / `F.rms_norm`，以及用 `torch.compile` 编译的从零实现的模块。计时在两种张量尺寸上进行，分别测仅前向和前向加反向，并把每个时间换算成实际达到的带宽，与同一台机器在同一次运行中测得的普通拷贝的带宽相比较。代码见 `snippets/norm_speed.py`。
#
# **计时因运行而异，也因机器而异**。本页的每一个时间、带宽、加速比和结论，都是在构建本页时、在构建它的那台机器（名称见下文）上测得的，而那台机器当时可能正同时运行着其他任务。因此，每种实现都计时多次，并且所有实现的重复测量交错进行，让后台负载均匀地落在每一种实现上；每个计时都以**中位数及其四分位距**（中间一半样本所在的范围）给出。**只有当两者耗时的范围不重叠时，结论才会说其中一个比另一个快**；否则结论是：在这一精度下测不出差别。加速比等比值也附有范围：当且仅当结论认定有差别时，该范围不包含 1。与计时无关的数字（字节数、运算次数、数值误差）每次运行都相同。

# %% [markdown]
# ## 结论 { #what-we-found }
#
# ### GPU { #gpu }
#
# [[gpu-results:norm_speed-verdict]]
#
# 各尺寸、各数据类型、前向与反向的全部数据：
#
# [[gpu-results:norm_speed]]
#
# GPU 数据来自 `make bench-gpu`，而不是本页的这次运行，因为本页是在 CPU 上构建的（下文“在 GPU 上”一节说明测量方法）。判定规则与 CPU 上相同，用在表中印出的范围上：每个数字的范围是它自己耗时的四分位距，换算成拷贝带宽中位数的比例；只有当一种实现的范围与最快的那些实现的范围都不重叠时，才把它排在它们之后。
#
# **选用粗体的单元格**。对每种数据类型、尺寸和计算方式，粗体标出最快的实现，以及测不出比它慢的实现：在这一形状的模型里就该用它们。达到拷贝带宽 100 % 附近的归一化，单靠自身已没有提升余地；再要更快，只能把更多工作融合进同一遍内存访问，例如归一化之前的残差加法：[GPU 上的 RMSNorm](../../fast/rmsnorm-gpu/) 用一个 Triton 内核把它融合进来，并用同样的方法测量这个内核。
#
# **基准测试怎样编译、怎样计时，决定了它的结论**。本页的早先版本在 GPU 上为编译后的模块计时，用的是在 CPU 上计时的方式。同样的模块，在同一次运行中按那种方式计时：
#
# [[gpu-results:old_method]]
#
# 那种方式测到的，并不是模型实际得到的内核：
#
# - 编译出的代码按函数保存，由一个类的所有实例共用：形状相同的第二个 `RMSNorm` 运行的是为第一个编译的图（下文“在 GPU 上”一节统计了这一点）；条目数超过 `torch._dynamo.config.recompile_limit` 之后，这个函数就不再编译，直接以 eager 模式运行。
# - 用 `dynamic=True` 时，一个在遇到的第一个行数上调优的内核，服务于所有行数。
# - 单独一次编译后的调用，要先在主机上经过 Dynamo 的守卫（guard）检查和 Inductor 的 Python 包装代码，内核才开始运行。如果这段时间与内核的运行时间相当，用挂钟时间计量连续多次调用，测到的就是主机，编译后的 LayerNorm 和编译后的 RMSNorm 结果就差不多。在整体编译的模型里，守卫在每次调用模型时检查一次，而不是每个归一化检查一次。GPU 表格用 † 标出主机每次调用所用时间接近 GPU 时间的数据。
# - 在 2048 × 1024、float32 下，$x$ 能装进大型 GPU 的 L2 缓存，所以对上一次调用用过的同一个输入再做调用，很大一部分数据是从缓存读取的。

# %% [markdown]
# ### CPU { #cpu }
#
# 下面的每一个快慢排序，都是判定规则（范围不重叠）给出的结论，由下面的单元格以及页面末尾的汇总打印出来；文字讲的是运算统计预测了什么，而不是某一次运行测到了什么。
#
# **公式不等于速度**。RMSNorm 每个元素的浮点运算更少，但两种归一化都远在脊点之下：决定它们耗时的是访存量。还没开始计时，单看运算统计就能预测：哪种归一化更快，取决于实现。
#
# - `nn.LayerNorm` 和 `F.layer_norm` 前向运行一个融合内核，反向也运行一个，访存量都是理想值。
# - 在 CPU 上，`nn.RMSNorm` 和 `F.rms_norm` 运行的是与从零实现的 RMSNorm 相同的一串逐元素运算和归约，访存量是理想值的好几倍，所以运算统计预测，在“nn vs nn”和“F vs F”中 LayerNorm 领先；下文赛跑中的结论说明了本次运行是否测到了这一点。PyTorch 已经加入的融合 RMSNorm 内核是面向 CUDA 和 MPS 的。
# - 从零实现的 LayerNorm 比从零实现的 RMSNorm 搬运更多字节（见下面的统计）：减去均值要多付出一次归约和更多遍完整的逐元素运算。对这两个 eager 模块，运算统计预测 RMSNorm 领先；“scratch vs scratch”那一行给出了实测的节省、它的范围和结论。这正是论文测量时的情形：那些框架把公式的每一步都作为单独的内核来运行。
# - `torch.compile` 把每个从零实现的模块变成少数几个融合内核（下面会列出），所以两个编译后的归一化搬运的字节数几乎相同；“compiled vs compiled”的结论说明在这里是否测得出差别。
#
# **关于“7–64%”**。它不是浮点运算量，也不是归一化本身的属性：它是 2019 年的框架中整个模型的运行时间。就归一化本身而言，结论那一行比较的是这台机器上最快的 RMSNorm 与最快的 LayerNorm，这才是实践者能够选择的比较。在 Transformer 中，归一化本来也只占很小一部分时间：同一层里的矩阵乘法对残差流的每个元素要做 $O(H)$ 次浮点运算，而归一化只有寥寥几次，所以归一化上省下的时间放到整个模型里还会进一步缩水。就 Transformer 而言，论文自己的数字是 Transformer-base 的 6.9%；64% 属于循环模型上的 pRMSNorm。至于 RMSNorm“推理/推断更高效”[C]，这只有当 RMSNorm 的内核和它所替换的 LayerNorm 内核一样好时才成立；在 CPU 上，`nn.RMSNorm` 运行的是一串运算，搬运的字节数是 `nn.LayerNorm` 那一个内核的好几倍。
#
# **关于目标**。目标那几行说明，在大尺寸下最快的 RMSNorm 是否达到了拷贝带宽的一半：先是默认分配器，然后是保留释放的内存以供重用；如果它的百分比范围包含 50%，这个问题就没有定论。没有达到目标时，原因就是本页测量的这几项：每个大输出落在全新内存上引起的缺页（见下文“分配器”一节）；eager 运算链多出的内存遍历（即为它打印的“at best”比例）；编译后的反向先对所有行求出 $\partial L/\partial\gamma$，再计算 $\partial L/\partial x$，因此把 $x$ 和 $\partial L/\partial y$ 读了两遍（其源码就是 `run_and_get_code` 返回的内容）；以及核心少、又与其他任务共享，这让较短的计时变得粗糙，也让拷贝带宽随运行而变化。正因如此，每个计时都附有范围。

# %% [markdown]
# ## 预期 { #what-we-expected }
#
# **说法**。介绍前置层归一化（Pre-LN）Transformer 的文章常说，RMSNorm“进一步减少 7-64 % 归一化 FLOPs”[B]，能让推理更高效，还是大模型跑得快的原因。这个数字出自 Zhang & Sennrich 2019（[arXiv 1910.07467](https://arxiv.org/abs/1910.07467)），其摘要说 RMSNorm“在不同模型上把运行时间缩短了 7%∼64%”。这是**整个模型**运行时间的缩短（在 GPU 上，分别用 TensorFlow、Theano 和 PyTorch 实现），而不是归一化本身的浮点运算量：按论文的结果表（见[已发布模型中的 RMSNorm](../../reference/rmsnorm-models/#is-rmsnorm-what-makes-llms-fast) 一页和下文的参考来源），Transformer-base 模型节省了 6.9%（即那个“7%”），而“64%”是 pRMSNorm（部分均方根归一化）在一个 GRU 顺序嵌入（order-embedding）模型上的结果（63.9%）；普通 RMSNorm 最多节省 40.8%。
#
# **浮点运算**。对 $x$ 的每个元素，LayerNorm 的前向要做：求均值的累加，减去均值，平方，求方差的累加，乘以 $1/\sqrt{\sigma^2+\varepsilon}$，乘以 $\gamma$，再加上 $\beta$；RMSNorm 则只有平方、加法、乘以 $1/\mathrm{RMS}$ 和乘以 $\gamma$。RMSNorm 每个元素的浮点运算更少（第一个代码单元格会把它们数出来），但归一化是**受内存带宽限制的（memory-bound）**：它每搬运一个字节大约只做一次浮点运算，而一个 CPU 核心或一块 GPU 在搬运一个字节的时间里能做许多次浮点运算（下文以“脊点”（ridge point）的形式测量这一比值）。因此，归一化的耗时由它读写的字节数决定，而在这一点上两种归一化几乎相同：读 $x$，写 $y$，外加一两个参数向量。
#
# **所以我们预期**：实现得好的 RMSNorm 与实现得好的 LayerNorm 耗时大致相同，都接近拷贝一遍 $x$ 的时间；两者之间如果有较大差别，也来自**实现对内存遍历了几遍**，而不是来自公式。PyTorch 把 LayerNorm 作为一个专用的内核（kernel）运行（即下文出现的 `native_layer_norm`）；它的融合 RMSNorm 内核则是最近才加入的（CUDA：pytorch/pytorch PR #153666，2025 年；MPS：PR #145301），所以在 CPU 上，`nn.RMSNorm` 可能是以一串逐元素运算的形式运行的。eager 模式下从零实现的代码，公式中的每一步运算都各自遍历一遍内存；`torch.compile` 则可以把它们融合起来。
#
# 为本页设定的**目标**是：在大尺寸下，CPU 上最快的 RMSNorm 至少达到实测拷贝带宽的一半。

# %% [markdown]
# ## 设置 { #settings }
#
# - 输入 $x$ 的形状（行数，隐藏维度）为 (2048, 1024) 和 (4096, 4096)，float32，大小分别为 8 MiB 和 64 MiB。前者足够小，末级缓存可以容纳它的很大一部分。后者就是“大尺寸”：它是单个核心 L2 缓存的许多倍，而且超过了一个界限：从这个大小起，C 库的 `malloc` 默认每次请求都交出新的内存（见下文“分配器”一节）。机器的各级缓存大小打印在下面；与其他任务共享的末级缓存，可能有一部分被占用。只有大尺寸决定结论。
# - $x = 2\,\mathcal{N}(0, 1) + 0.5$，随机种子由形状决定；上游梯度为 $\cos(x)$，同一尺寸下的每次调用都用同一个张量。权重在 $[0.5, 1.5]$ 内均匀分布，LayerNorm 的偏置在 $[-0.5, 0.5]$ 内均匀分布，种子由隐藏维度决定；同一种归一化的所有实现共用同样的参数张量。
# - 两种归一化都取 $\varepsilon = 10^{-5}$（若用 `nn.RMSNorm` 的默认值，则会是 float32 的机器精度；这个取值不影响速度）。
# - **前向**（forward）：在 `torch.no_grad()` 下调用一次。**前向+反向**（forward+backward）：调用一次，再对 $x$ 和每个参数做一次 `torch.autograd.grad`。
# - 计时，按尺寸进行：每种实现在每种计算方式下先单独运行一次并计时（对于 `torch.compile` 版本，这次调用就是编译）。随后进行 15 轮；每一轮为每种实现、每种计算方式以及下面的两种拷贝各取一个样本，顺序每轮重新随机打乱（有固定种子）。一个样本就是一次调用（GPU 的计时方式不同，见“在 GPU 上”一节）。报告的是 15 个样本的中位数及其四分位距，写作“中位数（第一四分位数–第三四分位数）”。样本再少一些，四分位数就会分散得厉害，下面的判定规则便会经常把同一段代码的两次运行判为不同（这类误报的比率在下文计算）。
# - 拷贝带宽：对与 $x$ 元素个数相同的张量做 `dst.copy_(src)`，按 2 × 大小计（读 + 写），与各归一化在同样的轮次中计时；另测 `src.clone()`，即拷贝到每次调用都新分配的张量里，正如归一化的输出那样。
# - `torch.compile(module, dynamic=True)`，使用默认的 Inductor 后端：每种归一化、每个隐藏维度、每种梯度模式各编译一次，适用于所有行数。编译时间会一并报告。
# - 线程：PyTorch 的默认设置，打印在下面；不做任何改动。
# - 内存：C 库 `malloc` 的默认设置，直到“分配器”一节为止；那一节会为本 notebook 余下的部分改变这些设置，并重新测量大尺寸。
# - 其他一切都用种子 0。

# %%

# %% [markdown]
# ## 计入哪些字节 { #the-bytes-we-count }
#
# 一次调用实际达到的带宽，是它**至少必须搬运的字节数**除以它的耗时（代码片段中的 `bytes_moved`）。设 $x$ 有 $R \times H$ 个元素，每个元素 $b$ 字节：
#
# - **前向**读取 $x$ 和 $\gamma$（以及 $\beta$），写出 $y$；
# - **训练时的前向**还要写出为反向传播保存的逐行统计量（LayerNorm：均值和 $1/\sigma$；RMSNorm：$1/\mathrm{RMS}$），类型为 float32；
# - **反向**读取 $x$、$\partial L/\partial y$、统计量和 $\gamma$，写出 $\partial L/\partial x$ 和 $\partial L/\partial\gamma$（以及 $\partial L/\partial\beta$）。
#
# 因此，前向搬运 $2RHb$ 字节外加参数，前向+反向搬运 $5RHb$ 外加一些小项：计算 $\partial L/\partial x$ 既需要 $x$（用保存的统计量重建 $\hat x$），也需要 $\partial L/\partial y$。这是每个张量只读一次的理想实现的访存量；遍历次数更多的实现会搬运更多字节，按这种计法，就表现为更低的实际带宽。拷贝一遍 $x$ 搬运 $2RHb$，与理想的前向相同。

# %%

# %% [markdown]
# ## 每种 eager 实现运行了什么 { #what-each-eager-implementation-runs }
#
# 在计时之前先看：一次 eager 模式的调用运行了哪些运算，搬运了多少字节？`op_traffic` 借助一个 `TorchDispatchMode`，记录每一个读写与 $x$ 一样大的张量的 ATen 运算，并把这些张量的字节数加起来。当 $x$ 远大于缓存时，上一个运算的数据不会留在缓存里给下一个运算用，所以这个总数就是这次调用搬运的字节数；用理想字节数除以它，就得到这种实现最多能达到拷贝带宽的多大比例。

# %%

# %% [markdown]
# 融合的 `native_layer_norm` 内核搬运的正是理想访存量。上面其余每一行 eager 实现都是一串运算，每个运算都完整地遍历一遍内存，其中好几个还会写出一个与 $x$ 一样大的临时张量，再由下一个运算读回来。
#
# `torch.compile` 会用生成的内核替换这样的运算链。下一个单元格在一个小输入上把从零实现的模块各编译一次，并列出 Inductor 生成的内核（用的是 PyTorch 的测试辅助函数 `torch._inductor.utils.run_and_get_code`；如果没有这个函数，单元格会注明）。

# %%

# %% [markdown]
# ## 每种实现算出的数都相同 { #same-numbers-from-every-implementation }
#
# 只有每位选手算的都是同一个函数，比赛才算公平。对每种归一化和每个隐藏维度，在一个小输入上把每种实现的输出及梯度（对 $x$ 和各参数）与 `nn.LayerNorm` / `nn.RMSNorm` 相比较。下文计时的也正是这些对象；每个编译版本的第一次调用会触发编译。

# %%

# %% [markdown]
# ## CPU 上的比赛 { #the-race-on-the-cpu }
#
# 每种尺寸先给出它的拷贝带宽，以及拷贝到新张量（`clone`）的带宽占拷贝带宽的百分比。随后每一行按尺寸给出每次调用的时间，即中位数及其四分位距（结论比较的正是这些范围），以及实际达到的带宽（按理想字节数计）占拷贝带宽的百分比，附上两个计时的四分位数所允许的范围。


# %%

# %% [markdown]
# ## Roofline 视角 { #roofline-view }
#
# 对受内存带宽限制的运算来说，Roofline（屋顶线）模型的“屋顶”是带宽，而不是浮点运算速率。每个子图把每种实现实际达到的带宽画成 $x$ 大小的函数，上方是同一尺寸下的拷贝带宽（黑色点线），也就是天花板。灰色虚线是拷贝到新张量的带宽。每个点是中位数，误差棒覆盖四分位距。小尺寸的点可能高于大尺寸的天花板，因为这时 $x$ 能放进缓存。


# %% alt="各 LayerNorm 与 RMSNorm 实现的 GB/s 随规模的变化，以拷贝带宽为上限"

# %% [markdown]
# 这里实测的是 Roofline 模型的脊点：float32 矩阵乘法的浮点运算速率，除以最大尺寸下的拷贝带宽。一个运算每字节的浮点运算数若低于脊点的整个范围，它就受内存限制。

# %%

# %% [markdown]
# ## RMSNorm 对比 LayerNorm { #rmsnorm-against-layernorm }
#
# 论文报告的是**节省的运行时间** $1 - t_\text{RMSNorm} /
# t_\text{LayerNorm}$；下面几行在每种尺寸下给出这个量：两种归一化采用同一种实现时的值，以及最快的 RMSNorm 对最快的 LayerNorm（各取中位数最低者）时的值，并附上它的范围和判定规则的结论。负值表示 RMSNorm 耗时更长。别处引用的结论用的都是大尺寸，因为这时一次调用持续得足够久，计时才准。待检验的说法是 RMSNorm 能节省时间，所以关于它的那一行结论只问是否测到了节省：“RMSNorm slower”和“no measurable difference”都意味着没有测到。
#
# 有两对实现运行的是相同的运算，因此可以用来检验判定规则本身：`nn.RMSNorm` 与 `F.rms_norm`，以及 `nn.LayerNorm` 与 `F.layer_norm`（见上面的运算统计）。在这两对之间，规则应当找不到差别。


# %%

# %% [markdown]
# ## 目标：拷贝带宽的一半 { #the-goal-half-the-copy-bandwidth }
#
# 在大尺寸下，最快的 RMSNorm 能否达到拷贝带宽的至少一半？按同样的规则，只有当它的百分比的整个范围都不低于 50% 时，才算达到目标；只有整个范围都低于 50% 时，才算没有达到。此外，按每种 eager 实现的运算链所搬运的访存量（来自上面的运算统计），它最多又能达到多少？


# %%

# %% [markdown]
# ## 在 GPU 上 { #on-a-gpu }
#
# 页首的 GPU 数据来自 `gpu_benchmark`。它与 CPU 上的赛跑有四点不同，每一点的理由都在页首给出：
#
# - 每种数据类型、每个尺寸都在 `torch._dynamo.reset()` 之后重新做一次 `torch.compile(dynamic=False)`；编译用了多少个图、重新编译了几次都会统计（`compile_counts`），计时期间若有编译也会统计；
# - 输入、上游梯度和拷贝用的缓冲区在 `rotation` 份副本间轮换，这些副本合起来至少是 L2 缓存的两倍（设备的 `L2_cache_size`）；
# - 每个样本用 CUDA 事件计时，同时记录主机每次调用所用的时间；
# - float32 和 bfloat16，尺寸为 4096 × 4096，以及真实大语言模型层的尺寸 32768 × 4096 和 16384 × 8192（词元数 × 隐藏维度）。
#
# `make bench-gpu`（`scripts/bench_gpu.py`）在所有这些尺寸上运行它，也按旧方式测一遍，并写出 `docs/experiments/results/gpu_norm_speed.json`，其中有 GPU、驱动、CUDA、torch 和 Triton 的版本，提交，代码的哈希以及每一个样本；构建时，页首的表格就取自这个文件。
#
# 为什么每个尺寸都要重新编译：Dynamo 按函数而不是按模块保存编译出的代码。两个形状相同、分别编译的新 `RMSNorm` 实例共用同一个图（`backend="eager"` 保留 Dynamo 的图捕获和缓存，但不生成内核）：

# %%

# %% [markdown]
# 本 notebook 在 GPU 上运行时，下面的单元格会在 32768 × 4096 上运行这个基准测试；没有 GPU 时，单元格会注明这一点。

# %%

# %% [markdown]
# ## 分配器 { #the-allocator }
#
# 在大尺寸下，拷贝到一个**新**张量，可能比拷贝到已有的张量更慢，而每次归一化调用都要写出一个新的输出。PyTorch 的 CPU 分配器用 `malloc` 取得每个张量，再用 `free` 归还；对超过 mmap 阈值（在 64 位系统上最高 32 MiB）的内存块，glibc 用一次新的 `mmap` 来满足，并在 `free` 时解除映射，所以下一次调用的输出的每个页面第一次被写入时都会触发缺页（page fault）（出处见下文的参考来源）。一次调用的缺页次数如下：

# %%

# %% [markdown]
# 调高 glibc 的 mmap 阈值和 trim 阈值（用 `mallopt`），释放的内存块就会留给下一次调用使用；PyTorch 性能调优指南在 CPU 上推荐的 jemalloc 和 TCMalloc 按设计就是这样做的。`keep_freed_memory` 为本 notebook 余下的部分做这项设置；随后对 `nn.LayerNorm` 和两个编译后的模块重新测量大尺寸。（在 GPU 上，PyTorch 的缓存分配器按设计就会保留释放的内存块。）

# %%

# %% [markdown]
# ## 参考来源 { #sources }
#
# - Zhang, Sennrich 2019，*Root Mean Square Layer Normalization*，NeurIPS，[arXiv 1910.07467](https://arxiv.org/abs/1910.07467)：摘要（在不同模型上把运行时间缩短 7%∼64%），结果表（逐模型的运行时间缩短，取自几份彼此一致的结果表转录，并未对照 PDF 原文核实；见[已发布模型中的 RMSNorm](../../reference/rmsnorm-models/#is-rmsnorm-what-makes-llms-fast) 一页）。
# - pytorch/pytorch PR #153666（融合 RMSNorm，CUDA）和 PR #145301（MPS）；`c10/core/impl/alloc_cpu.cpp`（CPU 分配器调用 `posix_memalign` 和 `free`）。
# - PyTorch 文档：`torch.nn.LayerNorm`、`torch.nn.RMSNorm`、`torch.nn.functional.rms_norm`、`torch.compile`、`torch.cuda.Event`、`torch.cuda.get_device_properties`；`torch/_dynamo/config.py`（`recompile_limit`）和 `torch._dynamo.reset`；PyTorch 性能调优指南（pytorch/tutorials `recipes_source/recipes/tuning_guide.py`，“Switch Memory allocator”）。
# - GNU C Library 手册，“Malloc Tunable Parameters”（`M_MMAP_THRESHOLD`、`M_TRIM_THRESHOLD`、`MALLOC_MMAP_THRESHOLD_`）；glibc `malloc/malloc.c`（`DEFAULT_MMAP_THRESHOLD_MAX`，64 位系统上为 32 MiB）。
# - Williams, Waterman, Patterson 2009，*Roofline: an insightful visual performance model for multicore architectures*，Communications of the ACM 52(4)。
# - McCalpin，STREAM 基准测试：一次拷贝按搬运 2 × 大小字节计。

# %%
