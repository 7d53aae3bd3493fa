# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Activations before and after LayerNorm
#
# What does [layer normalization](../../foundations/layer-norm/) do to a batch
# of tokens whose features live on very different scales? This notebook builds
# such a batch, runs it through the from-scratch `LayerNorm` of
# `snippets/layer_norm.py`, and plots the distributions before and after.
# It is executed every time the site is built; the numbers and plots below come
# from that run.
#
# **Settings**: 512 tokens of 256 features, seed 0. Each token gets its own
# offset (normal, std 3) and its own scale (log-uniform, from about 0.1 to 10),
# as happens on the residual stream of a deep network.

# %%
import matplotlib.pyplot as plt
import torch

from snippets.layer_norm import LayerNorm

torch.manual_seed(0)
tokens, features = 512, 256
offset = 3 * torch.randn(tokens, 1)
scale = torch.exp(torch.empty(tokens, 1).uniform_(-2.3, 2.3))  # e^±2.3 ≈ 0.1 … 10
x = offset + scale * torch.randn(tokens, features)

ln = LayerNorm(features)  # fresh layer: weight = 1, bias = 0
with torch.no_grad():
    y = ln(x)

# %% [markdown]
# ## Per-token statistics
#
# Before the layer, token means and standard deviations are spread over orders
# of magnitude. After it, every token has mean 0 and standard deviation 1, up to
# the small shrink that $\varepsilon$ causes.


# %%
def summary(name, t):
    mean, std = t.mean(-1), t.std(-1, unbiased=False)
    print(
        f"{name:>6}: token mean in [{mean.min().item():7.3f}, {mean.max().item():7.3f}]"
        f"   token std in [{std.min().item():7.3f}, {std.max().item():7.3f}]"
    )


summary("before", x)
summary("after", y)

# %% alt="Histograms of all values before and after LayerNorm; each token's std after vs before"
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), constrained_layout=True)
axes[0].hist(x.flatten().numpy(), bins=120, color="tab:gray")
axes[0].set_title("all values, before")
axes[1].hist(y.flatten().numpy(), bins=120, color="tab:blue")
axes[1].set_title("all values, after LayerNorm")
axes[2].scatter(x.std(-1).numpy(), y.std(-1).numpy(), s=6, color="tab:blue")
axes[2].set_xscale("log")
axes[2].set_xlabel("token std before")
axes[2].set_ylabel("token std after")
axes[2].set_title("each token, std before vs after")
for ax in axes[:2]:
    ax.set_yscale("log")
    ax.set_xlabel("value")
plt.show()

# %% [markdown]
# ## What the layer cannot see
#
# LayerNorm is invariant to shifting or rescaling a whole token: adding a
# constant to all features, or multiplying them by a positive number, leaves
# its output unchanged (up to $\varepsilon$). That is the information it
# removes; the learned `weight` and `bias` can only put back one shared scale
# and offset per feature, not each token's own.

# %%
with torch.no_grad():
    shifted_scaled = ln(7.0 + 5.0 * x)
print("max |LN(7 + 5x) - LN(x)| =", f"{(shifted_scaled - y).abs().max().item():.2e}")
