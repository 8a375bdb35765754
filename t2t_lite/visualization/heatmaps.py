"""PNG heatmaps of attention weights (matplotlib, no display needed).

One figure per kind and layer, one panel per head, queries down the side and
keys along the top, as in the appendix figures of "Attention Is All You Need"
and Figure 3 of Bahdanau et al.
"""
from __future__ import annotations

import math
import os

import matplotlib

matplotlib.use("Agg")  # files only: no display, no GUI toolkit
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from t2t_lite.visualization.attention_maps import AttentionMaps  # noqa: E402

TITLES = {"encoder_self": "encoder self-attention", "decoder_self": "decoder self-attention",
          "encoder_decoder": "encoder-decoder attention"}


def plot_layer(weights: np.ndarray, queries: list[str], keys: list[str], title: str,
               path: str, dpi: int = 110) -> None:
    """weights [heads, queries, keys] -> one PNG at ``path`` with a panel per head."""
    heads = weights.shape[0]
    columns = min(heads, 4)
    rows = math.ceil(heads / columns)
    cell = 0.28  # inches per token
    panel_width = max(3.0, cell * len(keys) + 1.2)
    panel_height = max(2.5, cell * len(queries) + 1.2)
    figure, axes = plt.subplots(rows, columns, squeeze=False,
                                figsize=(columns * panel_width, rows * panel_height))
    font = max(5, min(9, int(220 / max(len(keys), len(queries), 1))))
    for head in range(rows * columns):
        axis = axes[head // columns][head % columns]
        if head >= heads:
            axis.axis("off")
            continue
        axis.imshow(weights[head], cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        axis.set_xticks(range(len(keys)), keys, rotation=90, fontsize=font)
        axis.set_yticks(range(len(queries)), queries, fontsize=font)
        axis.xaxis.tick_top()
        axis.set_title(f"head {head}" if heads > 1 else "", fontsize=font + 1)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=dpi)
    plt.close(figure)


def write_heatmaps(maps: AttentionMaps, out_dir: str, dpi: int = 110) -> list[str]:
    """One PNG per kind and layer in ``out_dir`` (``{kind}_layer{i}.png``); returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for kind, weights in maps.weights.items():
        queries, keys = maps.axes(kind)
        for layer in range(weights.shape[0]):
            path = os.path.join(out_dir, f"{kind}_layer{layer}.png")
            title = TITLES[kind] + (f", layer {layer}" if weights.shape[0] > 1 else "")
            plot_layer(weights[layer], queries, keys, title, path, dpi)
            paths.append(path)
    return paths
