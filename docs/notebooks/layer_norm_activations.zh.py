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
# [层归一化（LayerNorm）](../../foundations/layer-norm/)会对它们做些什么？
# 这个 Notebook 先构造这样一批词元，再让它们经过 `snippets/layer_norm.py`
# 中从零实现的 `LayerNorm`，并画出归一化前后的分布。
# 每次构建站点时都会执行这个 Notebook，下面的数字和图都来自那次运行。
#
# **设置**：512 个词元，每个词元 256 个特征，随机种子为 0。
# 每个词元都有自己的偏移（正态分布，标准差为 3）和自己的尺度（对数均匀分布，
# 范围约从 0.1 到 10），深层网络的残差流中正会出现这种情况。

# %%

# %% [markdown]
# ## 逐词元的统计量 { #per-token-statistics }
#
# 经过这一层之前，各词元的均值和标准差跨越好几个数量级。
# 经过之后，每个词元的均值都是 0、标准差都是 1，只差 $\varepsilon$ 带来的那一点点缩小。


# %%

# %% alt="LayerNorm 前后所有数值的直方图；每个词元归一化后与归一化前的标准差对比"

# %% [markdown]
# ## 这一层看不到什么 { #what-the-layer-cannot-see }
#
# LayerNorm 对整个词元的平移或缩放保持不变：给所有特征加上同一个常数，
# 或者把它们都乘以同一个正数，输出都不会改变（在 $\varepsilon$ 的误差范围内）。
# 这正是它抹掉的信息；可学习的 `weight` 和 `bias` 只能为每个特征恢复一个
# 所有词元共享的尺度和偏移，而无法恢复每个词元各自的尺度和偏移。

# %%
