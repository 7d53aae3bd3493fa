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
# # Depth and the residual stream
#
# Two questions about deep stacks. First, at initialization, how large does the residual
# stream get from layer to layer, for each placement of the norm? Second, with one fixed
# learning rate and no warmup, which placements still train at 6, 24 and 48 layers? The
# models are the handbook's `Stack` and `GPT` (`snippets/resnorm.py`); the probes
# are in `snippets/depth_probe.py`. This page is executed every time the site is built;
# every number below comes from that run.
#
# ## What we expected
#
# - **Post-LN** ends every sublayer with a LayerNorm, so the stream between layers has a
#   fixed scale whatever the depth (Xiong et al. 2020, arXiv 2002.04745, §3.3, Lemma 2).
# - **Pre-LN** leaves the residual sum un-normalized. Lemma 2 bounds it in the paper's
#   simplified setting:
#   $(1 + \tfrac{l}{2})\,d \le \mathbb{E}\|x_l\|^2 \le (1 + \tfrac{3l}{2})\,d$, linear
#   growth in the layer index $l$ (see
#   [Pre-LN](../../placement/pre-ln/#the-residual-stream-grows)). The lemma's constants
#   belong to its setting; a stack with other widths, activations or initialization can
#   grow at another rate.
# - **Peri-LN** (Kim et al. 2025, arXiv 2502.02732) normalizes the input and the output
#   of every branch, $x + \mathrm{Norm}(F(\mathrm{Norm}(x)))$
#   (`norm_position="sandwich"`, the block of CogView's Sandwich-LN, Ding et al. 2021,
#   arXiv 2105.13290). Every branch then adds a vector of fixed size, so the stream
#   should still grow linearly, with a slope set by the norm rather than by the weights.
#   Kim et al. claim more balanced variance growth and steadier gradients than Pre-LN
#   *during training* of models up to 3.2B parameters, which this page does not test.
# - **LayerNorm Scaling** (Sun et al. 2025, *The Curse of Depth*, arXiv 2502.05795)
#   multiplies the norm's output in layer $l$ by $1/\sqrt{l}$ (`norm_position="lns"`),
#   so that deep layers add less and the stream should grow more slowly than in Pre-LN.
#   Sun et al.'s abstract describes Pre-LN's output variance as growing exponentially
#   with depth, which makes deep blocks close to the identity.
# - **Trainability.** Post-LN needs learning-rate warmup (Xiong et al., §3.2); DeepNet's
#   DeepNorm (Wang et al. 2022, arXiv 2203.00555) keeps the Post-LN layout, up-weights
#   the residual by $\alpha = (2N)^{1/4}$ and scales the init by $\beta = (8N)^{-1/4}$,
#   and trained 1,000 layers; ReZero (Bachlechner et al. 2020, arXiv 2003.04887) drops
#   the norm, starts every branch at weight 0 and trained 120-layer Transformers. Pre-LN
#   trains without warmup in Xiong et al.'s experiments (§4). Why the placements differ
#   is discussed once, in
#   [why Pre-LN trains more stably](../../placement/pre-ln/#why-pre-ln-trains-more-stably).
# - **What the source articles say** (the five Chinese posts this handbook grew from,
#   listed in the [claims ledger](../claims/)). They note, correctly, that Pre-LN normalizes only
#   what enters each sublayer; they also claim that it keeps the residual sum's variance
#   "relatively stable", that Post-LN is hard to train beyond about 24 layers while
#   Pre-LN trains 100+, and they write Sandwich-LN as
#   $\mathrm{LN}(x + F(\mathrm{LN}(x)))$. The stability claim contradicts Lemma 2 and is
#   measured below; the depth claims are tested at 6, 24 and 48 layers in one small
#   setting; the Sandwich-LN formula is not CogView's, whose code (THUDM/CogView
#   `mpu/sparse_transformer.py`) adds $\mathrm{LN}(F(\mathrm{LN}(x)))$ to an
#   un-normalized $x$.
#
# ## Settings
#
# **Part 1, the stream at initialization.**
# `Stack(24, d_model=64, n_heads=4, d_ff=256, activation="relu", final_norm=False)` for
# `norm_position` in post, pre, sandwich and lns; every `nn.Linear` re-initialized
# Xavier-normal with zero biases (`xavier_init_(stack, qkv="per_projection")` from
# `snippets/lm_experiment.py`: $W_q$, $W_k$, $W_v$ each as a square matrix of its own,
# as the papers write them and as Xiong et al.'s analysis takes them), as in the
# [gradient experiment](../gradients_at_init/); unit-variance Gaussian input, batch 8,
# sequence length 32; seeds 0-4; no gradient. Measured: $\mathbb{E}\|x_l\|^2/d$ after
# each layer, averaged over tokens, then mean and spread over seeds.
#
# **Part 2, trainability.**
# `GPT(vocab_size=16, block_size=16, n_embd=32, n_head=2, n_layer=L, norm_position=P)`
# with GELU and no dropout, for $L \in \{6, 24, 48\}$ and $P$ in post, pre, deepnorm and
# rezero. The blocks' `nn.Linear` weights are re-initialized Xavier as in Part 1, except
# DeepNorm, which keeps DeepNet's own $\beta$-scaled Xavier init (`GPT` applies it);
# embeddings and the tied output layer keep GPT-2's $\mathcal{N}(0, 0.02)$. The task,
# the trainer and the verdict words are those of the [warmup experiment](../warmup/),
# from `snippets/lm_experiment.py`:
#
# - Task: `MarkovLanguage(vocab_size=16, order=1, branching=2, seed=0)`, sequences from
#   a random Markov chain in which each token has two possible successors, with random
#   probabilities; a window starts after 16 steps of the chain. The previous token is
#   all a model needs. The reference losses are computed exactly from the chain and
#   printed below: `unigram`, the best loss of a model that ignores the previous tokens,
#   and `optimal`, the best loss any model can reach.
# - Training (`train_lm`): Adam, learning rate $10^{-3}$ constant from the first step
#   (no warmup, no gradient clipping), betas (0.9, 0.98), 60 steps of 8 fresh sequences
#   of 16 tokens, seed 0 for the model and the data, one run per (placement, depth).
#   Final loss: on 64 held-out sequences, drawn after the training batches.
# - Verdict (`outcome` on the held-out loss): "diverged" is a non-finite loss or a
#   training loss that ends above $\ln 16$; "no better than unigram" is a held-out loss
#   above the unigram loss minus 0.1 nats (the model learned the token frequencies and
#   nothing else); otherwise "trained".
#
# The learning rate was fixed before any run and not tuned; the step count is set by the
# time this page may take to build.
#
# One CPU thread (`torch.set_num_threads(1)`): these tensors are too small to gain from
# intra-op threads, and one thread keeps the build fast on a shared machine.

# %% tags=["collapse"]
import matplotlib.pyplot as plt
import torch
from IPython.display import display

from snippets.depth_probe import lemma2_band, stream_sq_norms
from snippets.grad_norms import power_law_fit
from snippets.lm_experiment import MarkovLanguage, outcome, train_lm, xavier_init_
from snippets.resnorm import GPT, GPTConfig, Stack

torch.set_num_threads(1)  # small tensors: threads cost more than they save

N_LAYERS, D_MODEL, N_HEADS, D_FF = 24, 64, 4, 256
BATCH, SEQ_LEN, SEEDS = 8, 32, range(5)
STREAM = {
    "post": "Post-LN",
    "pre": "Pre-LN",
    "sandwich": "Peri-LN",
    "lns": "LN Scaling",
}
COLORS = {"post": "tab:red", "pre": "tab:blue", "sandwich": "tab:green"}
COLORS.update(lns="tab:purple", deepnorm="tab:orange", rezero="tab:gray")


def stream(position, seed):
    torch.manual_seed(seed)
    stack = Stack(
        N_LAYERS,
        D_MODEL,
        N_HEADS,
        D_FF,
        norm_position=position,
        activation="relu",
        final_norm=False,
    )
    xavier_init_(stack, qkv="per_projection")  # see Settings
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, SEQ_LEN, D_MODEL, generator=g)
    return stream_sq_norms(stack, x)


norms = {}  # placement -> (seeds, L + 1)
for p in STREAM:
    norms[p] = torch.tensor([stream(p, s) for s in SEEDS])
lower, upper = (torch.tensor(b) for b in lemma2_band(N_LAYERS))

# %% [markdown]
# ## Part 1: the residual stream at initialization
#
# $\mathbb{E}\|x_l\|^2/d$ after each layer $l$ ($l = 0$ is the input), with Lemma 2's
# band for Pre-LN shaded. The band is drawn for comparison only: it is proved for the
# lemma's setting, not for this stack.

# %% alt="E‖xₗ‖²/d vs layer l at init: Post-LN, Pre-LN, Peri-LN, LN Scaling and the Lemma 2 band"
layers = range(N_LAYERS + 1)
fig, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
band = dict(color="tab:blue", alpha=0.12, label="Lemma 2 band (Pre-LN)")
ax.fill_between(layers, lower, upper, **band)
for p, name in STREAM.items():
    mean, std = norms[p].mean(0), norms[p].std(0)
    ax.plot(layers, mean, "o-", ms=3, color=COLORS[p], label=name)
    ax.fill_between(layers, mean - std, mean + std, color=COLORS[p], alpha=0.25)
ax.set_xlabel("layer l")
ax.set_ylabel(r"$E\,\|x_l\|^2 / d$")
ax.set_title("residual stream at initialization, 24 layers")
ax.legend()
plt.show()

print(" l  " + "".join(f"{name:>12s}" for name in STREAM.values()) + "   Lemma 2 band")
for i in (0, 1, 2, 4, 8, 12, 16, 20, 24):
    cells = "".join(f"{norms[p][:, i].mean():12.2f}" for p in STREAM)
    print(f"{i:2d}  {cells}   {lower[i]:5.1f} .. {upper[i]:5.1f}")

# %% [markdown]
# Where does the measured Pre-LN curve fall relative to the band, and what does each
# layer add? With Xavier weights and $d_{ff} = 4d$, a ReLU feed-forward branch fed a
# normalized input adds, per coordinate, $d_{ff}\cdot\frac{2}{d + d_{ff}}\cdot
# \frac{1}{2}\cdot d\cdot\frac{2}{d + d_{ff}} = \frac{2\,d\,d_{ff}}{(d + d_{ff})^2}$ in
# expectation, computed below next to the lemma's lower slope of $\tfrac12$ per layer.
# Attention adds little while the tokens are independent (it averages values over
# tokens) and more once they become alike, which they do with depth in this stack (the
# [gradient](../gradients_at_init/#a-loss-whose-gradient-depends-on-the-output)
# experiment prints the cosine similarity of tokens).

# %%
pre = norms["pre"].mean(0)
inside = ((pre >= lower) & (pre <= upper))[1:]
below = (pre < lower)[1:]
print(
    f"Pre-LN layers inside the band: {int(inside.sum())} of {N_LAYERS}; below it: "
    f"{int(below.sum())}; above it: {N_LAYERS - int(inside.sum()) - int(below.sum())}"
)
steps = pre.diff()  # what each layer adds to E||x||^2 / d
print(
    f"Pre-LN increase per layer: layers 1-4 {steps[:4].mean():.2f}, "
    f"layers 21-24 {steps[-4:].mean():.2f} (Lemma 2: between 0.50 and 1.50)"
)
ffn_alone = 2 * D_MODEL * D_FF / (D_MODEL + D_FF) ** 2
print(f"Xavier ReLU FFN alone, predicted: {ffn_alone:.2f} per layer")
for p in ("sandwich", "lns"):
    ratio = (norms[p][:, -1] / norms["pre"][:, -1]).mean()
    print(f"{STREAM[p]} / Pre-LN at layer {N_LAYERS}: {ratio:.2f}x")
post_max_dev = (norms["post"][:, 1:] - 1).abs().max()
print(f"Post-LN: largest |E||x_l||^2/d - 1| over layers and seeds: {post_max_dev:.4f}")
growth = norms["pre"][:, 1:] - 1  # (seeds, layers): what the layers added to the 1
k, k_lo, k_hi = power_law_fit(list(range(1, N_LAYERS + 1)), growth)
print(
    "Pre-LN: E||x_l||^2/d - 1 grows like l^k,",
    f"k = {k:.2f} [{k_lo:.2f}, {k_hi:.2f}] (linear: 1)",
)

# %% [markdown]
# ## Part 2: trainability at depth
#
# Each (placement, depth) trains once from scratch with the same learning rate, steps
# and data. The dotted lines are the uniform guess $\ln 16$, the unigram loss (the best
# loss without looking at the previous tokens) and the optimal loss.

# %%
language = MarkovLanguage(vocab_size=16, order=1, branching=2, seed=0)
TRAIN = dict(steps=60, lr=1e-3, batch_size=8, seq_len=16, seed=0)
DEPTHS = [6, 24, 48]
PLACEMENTS = {
    "post": "Post-LN",
    "pre": "Pre-LN",
    "deepnorm": "DeepNorm",
    "rezero": "ReZero",
}


def make_gpt(position, n_layers):
    torch.manual_seed(TRAIN["seed"])
    config = GPTConfig(
        vocab_size=16,
        block_size=16,
        n_layer=n_layers,
        n_head=2,
        n_embd=32,
        norm_position=position,
    )
    model = GPT(config)
    if position != "deepnorm":  # DeepNorm keeps DeepNet's beta-scaled Xavier init
        xavier_init_(model.stack, qkv="per_projection")
    return model


models, runs = {}, {}
for n in DEPTHS:
    for p in PLACEMENTS:
        models[p, n] = make_gpt(p, n)
        runs[p, n] = train_lm(models[p, n], language, **TRAIN)
base = language.baselines(TRAIN["seq_len"])
refs = {name: base[name] for name in ("uniform", "unigram", "optimal")}  # = bigram

# %% alt=["Train loss by step, per depth and placement", "Held-out loss vs depth"] tags=["collapse"]
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True, constrained_layout=True)
for ax, n in zip(axes, DEPTHS, strict=True):
    for p, name in PLACEMENTS.items():
        losses = torch.tensor(runs[p, n].losses)
        smooth = losses.unfold(0, 10, 1).mean(1) if len(losses) >= 10 else losses
        ax.plot(
            range(len(losses) - len(smooth) + 1, len(losses) + 1),
            smooth,
            color=COLORS[p],
            label=name,
        )
    for value in refs.values():
        ax.axhline(value, color="k", ls=":", lw=0.8)
    ax.set_title(f"{n} layers")
    ax.set_xlabel("step")
for label, value in refs.items():
    axes[-1].annotate(
        label,
        (1, value),
        xycoords=("axes fraction", "data"),
        ha="right",
        textcoords="offset points",
        xytext=(-2, 3),
        fontsize=8,
    )
axes[0].set_ylabel("training loss (nats, mean of 10 steps)")
axes[0].legend()
plt.show()

fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
for p, name in PLACEMENTS.items():
    eval_losses = [runs[p, n].eval_loss for n in DEPTHS]
    ax.plot(DEPTHS, eval_losses, "o-", color=COLORS[p], label=name)
for label, value in refs.items():
    ax.axhline(value, color="k", ls=":", lw=0.8)
    offset = dict(textcoords="offset points", xytext=(0, 3), fontsize=8)
    ax.annotate(label, (DEPTHS[0], value), **offset)
ax.set_xscale("log")
ax.set_xticks(DEPTHS, [str(n) for n in DEPTHS])
ax.minorticks_off()
ax.set_xlabel("number of layers L")
ax.set_ylabel(f"held-out loss after {TRAIN['steps']} steps (nats)")
ax.legend()
plt.show()

# %%
gap = base["unigram"] - base["optimal"]
print(", ".join(f"{k}: {v:.3f}" for k, v in base.items()), "(nats)")
print(
    f"held-out loss after {TRAIN['steps']} steps",
    "(share of the gap from 'unigram' to 'optimal' closed)",
)
print("placement " + "".join(f"{f'L = {n}':>18s}" for n in DEPTHS))
for p, name in PLACEMENTS.items():
    cells = []
    for n in DEPTHS:
        r = runs[p, n]
        closed = (base["unigram"] - r.eval_loss) / gap
        cell = f"{r.eval_loss:.3f} ({closed:4.0%})"
        cells.append("diverged (nan)" if r.diverged else cell)
    print(f"{name:9s} " + "".join(f"{c:>18s}" for c in cells))
n_diverged = sum(r.diverged for r in runs.values())
print(f"runs that diverged: {n_diverged} of {len(runs)}")

# the verdict words of the warmup experiment, on the held-out loss
verdicts = {key: outcome(r, base, loss="eval") for key, r in runs.items()}
print("\nverdict after training")
for p, name in PLACEMENTS.items():
    print(f"{name:9s} " + "; ".join(f"L = {n}: {verdicts[p, n]}" for n in DEPTHS))
rezero_alpha = {}
for n in DEPTHS:
    model = models["rezero", n]
    branches = [c for b in model.stack.layers for c in (b.attn, b.mlp)]
    alpha = max(abs(c.alpha.item()) for c in branches)
    rezero_alpha[n] = alpha
    print(f"ReZero, {n:2d} layers: largest |alpha| after training {alpha:.3f}")

# %% [markdown]
# ## What we saw
#
# The tables above are the result; read with them:
#
# - **The Pre-LN stream grows with depth; Post-LN's does not.** Post-LN stays at the
#   norm's scale at every layer. The Pre-LN stream grows layer after layer, so the
#   source articles' "relatively stable" variance is wrong at initialization, and Lemma
#   2's picture of a stream that keeps growing holds. Where the curve lies relative to
#   the band is printed above: the first layers stay just below the band (the
#   Xavier-initialized feed-forward branch with $d_{ff} = 4d$ adds less than the lemma's
#   lower slope, as computed), and the increase per layer rises with depth. The
#   exponent $k$ printed above says how fast the stream grows: linear growth gives
#   $k = 1$, and an interval wholly above 1 means faster than linear. That rise fits the tokens
#   becoming alike with depth (measured in the gradient experiment): attention then
#   stops averaging its values down. The band is proved for a simplified layer, not this
#   one.
# - **Peri-LN grows faster than Pre-LN at initialization, LayerNorm Scaling much more
#   slowly.** Normalizing each branch's output makes every sublayer add a vector of the
#   norm's size, independent of the weights, so Peri-LN's stream grows steadily; Kim et
#   al.'s claims are about training, which this part does not measure. LayerNorm Scaling
#   shrinks what deep layers add, as Sun et al. intend. Sun et al.'s abstract speaks of
#   Pre-LN's output variance growing exponentially with depth; at initialization and
#   over 24 layers, the growth here is fitted by a power of $l$ ($k$ above). Whether it
#   turns exponential deeper or during training, where their claim may apply, this page
#   does not test.
# - **Trainability.** The verdict lines say which runs diverged, which ended no better
#   than unigram and which trained. In this setting Post-LN trains at 6 layers but
#   stalls at 24 and 48: its held-out loss stays at the unigram loss, the best loss of a
#   model that ignores the previous tokens. It does not diverge. That fits what the
#   [gradient experiment](../gradients_at_init/) measured at initialization in its
#   (non-causal, wider) stacks: the tokens at the top of a deep Post-LN stack are nearly
#   identical, so its output barely depends on the input. Noci et al. 2022 (arXiv
#   2206.03126) report the same alignment growing with depth in Post-LN Transformers and
#   find that it can inhibit training; this page does not prove that it is the cause
#   here (the other candidates:
#   [why Pre-LN trains more stably](../../placement/pre-ln/#why-pre-ln-trains-more-stably)).
#   DeepNorm trains at every depth tested, and so does Pre-LN, which closes less
#   of the gap than DeepNorm at 24 and 48 layers in this budget (the shares are
#   printed). ReZero hardly moves. Each of its branches enters through an $\alpha$ that
#   starts at 0, and Adam moves a weight by at most about the learning rate per step
#   (Kingma & Ba 2015, arXiv 1412.6980, §2.1): the printed $|\alpha|$ stays small after
#   60 steps at $10^{-3}$, so the branches still add little to the embeddings. The
#   source articles' "Post-LN is hard beyond about 24 layers" matches this one setting;
#   "Pre-LN trains 100+ layers" is beyond what this page tests.
# - **How far this goes.** One small setting, one seed per run, 60 steps at one learning
#   rate without warmup. A different learning rate, width, step count or initialization
#   can change the outcome, and a single seed does not show the spread: read the table
#   as what happened here, not as a ranking of the placements.
#
# ## Sources
#
# - Xiong et al. 2020, arXiv 2002.04745: §3.2 (warmup), §3.3 (Lemma 2), §4.
# - Kim et al. 2025 (Peri-LN), arXiv 2502.02732; Ding et al. 2021 (CogView,
#   Sandwich-LN), arXiv 2105.13290, code THUDM/CogView `mpu/sparse_transformer.py`.
# - Sun et al. 2025, *The Curse of Depth in Large Language Models*, arXiv 2502.05795.
# - Wang et al. 2022 (DeepNet), arXiv 2203.00555, Figure 2(b) for $\alpha$ and $\beta$.
# - Bachlechner et al. 2020 (ReZero), arXiv 2003.04887.
# - Kingma & Ba 2015 (Adam), arXiv 1412.6980, §2.1.
# - Noci et al. 2022, *Signal propagation in Transformers*, arXiv 2206.03126.
# - Code: `snippets/depth_probe.py` (the stream probe), `snippets/lm_experiment.py` (the
#   task, the trainer, `outcome` and `xavier_init_`), `snippets/grad_norms.py`
#   (`power_law_fit`), `snippets/resnorm.py` (`Stack`, `GPT`), each with its tests.

# %% tags=["publish"]
results = {}
for p in STREAM:
    results[f"{p}_stream_sq_norm_L{N_LAYERS}"] = f"{norms[p][:, -1].mean():.2f}"
results["pre_stream_increase_first_layers"] = f"{steps[:4].mean():.2f}"
results["pre_stream_increase_last_layers"] = f"{steps[-4:].mean():.2f}"
results["pre_layers_inside_lemma2_band"] = f"{int(inside.sum())}/{N_LAYERS}"
results["pre_stream_growth_exponent"] = f"{k:.2f}"
growth_kind = "faster" if k_lo > 1 else "slower" if k_hi < 1 else "linear"
results["pre_stream_growth_verdict"] = {
    "phrase": f"growth.{growth_kind}",
    "exponent": f"{k:.2f}",
    "low": f"{k_lo:.2f}",
    "high": f"{k_hi:.2f}",
}
for (p, n), r in runs.items():
    results[f"final_loss_{p}_L{n}"] = "diverged" if r.diverged else f"{r.eval_loss:.2f}"
results["runs_diverged"] = f"{n_diverged}/{len(runs)}"
# the names the claims ledger quotes
results["pre_last_sq_norm"] = results[f"pre_stream_sq_norm_L{N_LAYERS}"]
results["post_last_sq_norm"] = results[f"post_stream_sq_norm_L{N_LAYERS}"]
for p in PLACEMENTS:
    results[f"{p}_48_loss"] = results[f"final_loss_{p}_L48"]
results["rezero_48_max_alpha"] = f"{rezero_alpha[48]:.3f}"
results["unigram_loss"] = f"{base['unigram']:.2f}"
results["optimal_loss"] = f"{base['optimal']:.2f}"
for p in PLACEMENTS:  # a verdict as the key each language words
    results[f"{p}_48_verdict"] = {"phrase": f"outcome.{verdicts[p, 48]}"}
display(
    {
        "application/vnd.resnorm.results+json": results,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in results.items()),
    },
    raw=True,
)
