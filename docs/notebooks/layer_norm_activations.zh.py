# ---
# jupyter:
#   # Code cells are empty on purpose: the build takes each one from layer_norm_activations.py.
#   # 代码单元格特意留空：构建时逐个取自 layer_norm_activations.py。
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # LayerNorm 前后的激活值 { #activations-before-and-after-layernorm }
#
# 如果一批词元（token）的特征分布在相差悬殊的尺度上，
# [层归一化](../../foundations/layer-norm/)会对它们做什么？
# 这个 notebook 先构造这样一批词元，让它们经过 `snippets/layer_norm.py`
# 里从零实现的 `LayerNorm`，再画出归一化前后的分布。
# 每次构建站点时都会执行这个 notebook，下面的数字和图都来自那次运行。
#
# **设置**：512 个词元，每个词元 256 个特征，随机种子为 0。
# 每个词元有各自的偏移（服从标准差为 3 的正态分布）和各自的尺度（服从对数均匀分布，
# 约从 0.1 到 10），深层网络的残差流里就会出现这种情况。

# %%

# %% [markdown]
# ## 逐词元的统计量 { #per-token-statistics }
#
# 归一化之前，各词元的均值和标准差相差好几个数量级；
# 归一化之后，每个词元的均值都是 0，标准差都是 1，只是 $\varepsilon$ 会让标准差略小一点。


# %%

# %% alt="LayerNorm 前后所有数值的直方图；每个词元归一化后与归一化前的标准差对比"

# %% [markdown]
# ## LayerNorm 丢掉了什么信息 { #what-the-layer-cannot-see }
#
# LayerNorm 对整个词元的平移和（正数）缩放具有不变性：给所有特征加上同一个常数，
# 或者把它们都乘以同一个正数，输出都不变（不计 $\varepsilon$ 的影响）。
# 这正是它抹掉的信息；可学习的 `weight` 和 `bias` 只能给每个特征恢复一套
# 所有词元共用的尺度和偏移，没法恢复每个词元自己的尺度和偏移。

# %%
