"""t2t-attention: pictures of a trained model's attention over one sentence pair.

    t2t-attention --output_dir=TRAINED --input="A man is riding a bike." --to=attention/

writes one PNG per attention kind and layer (a panel per head, tokens on the
axes) and index.html, a self-contained page to browse them: choose the kind,
layer and head, hover a token to see where it attends. Without --target the
target is decoded with the problem's decode settings (--decode_hparams).
Works for every model with attention (the Transformer: encoder self, decoder
self and encoder-decoder; the attention RNNs: encoder-decoder).
"""
from __future__ import annotations

import argparse
import os
from typing import Sequence

from t2t_lite.bin import common, trained_run


# Decode hparams of file decoding that one sentence's pictures have no use for.
DRAWING_UNUSED = {"batch_size": "one sentence is decoded",
                  **dict.fromkeys(("return_beams", "write_beam_scores", "num_samples"),
                                  "the pictures are of the best output")}


def parser() -> argparse.ArgumentParser:
    p = common.CommandParser(prog="t2t-attention", description=__doc__)
    common.add_registry_flags(p, required=False)
    common.add_raw_weights_flag(p)
    p.add_argument("--checkpoint_path", help="a checkpoint prefix (default: the latest)")
    p.add_argument("--input", required=True, help="the source sentence")
    p.add_argument("--target", default="",
                   help="its target (default: decode it, as t2t-decoder would)")
    p.add_argument("--decode_hparams", default="", help="as t2t-decoder's, for decoding")
    p.add_argument("--to", required=True, help="folder for the PNGs and index.html")
    p.add_argument("--dpi", type=common.between(10, 1200), default=110,
                   help="the PNGs' resolution (dots per inch)")
    return p


def draw(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    if trained_run.start(args):
        return 0
    if not args.input.strip():
        raise ValueError("--input is empty: give the source sentence to look at")
    run = trained_run.open_run(args, "t2t-attention")
    with (run.paths.output_folder("--to", args.to, replaces_own=True) as staging,
          common.writing("while drawing the attention", "--to", args.to)):
        count = _draw(args, run, staging)
    print(f"wrote {count} PNGs and {os.path.join(args.to, 'index.html')}")
    return 0


def _draw(args: argparse.Namespace, run: trained_run.OpenedRun, folder: str) -> int:
    """Decodes (unless --target is given) and writes the pictures and the page into
    ``folder``; returns the number of PNGs."""
    from t2t_lite.visualization import attention_maps
    from t2t_lite.models.base import NoAttentionError
    from t2t_lite.visualization.attention_page import write_page
    from t2t_lite.visualization.heatmaps import write_heatmaps

    model, _ = run.restored_model(args.checkpoint_path)
    settings = run.decode_settings(args.decode_hparams, unused=DRAWING_UNUSED)
    decoding = run.decoding(model, settings)
    source_encoder, target_encoder = decoding.encoder, decoding.target_encoder
    limit = decoding.rules.max_input_length
    source_ids = attention_maps.encode_sentence(args.input, "--input", source_encoder, limit)
    if args.target.strip():
        target_ids = attention_maps.encode_sentence(args.target, "--target", target_encoder,
                                                    limit)
    else:
        target_ids = attention_maps.best_decode(decoding, source_ids,
                                                decoding.settings.extra_length)
        print(f"decoded: {target_encoder.decode(target_ids)}")
    try:
        maps = attention_maps.attention_maps(model, source_ids, target_ids, source_encoder,
                                             target_encoder)
    except NoAttentionError as error:
        raise ValueError(f"{error}: pick a model with attention") from None
    pngs = write_heatmaps(maps, folder, args.dpi)
    write_page(maps, os.path.join(folder, "index.html"),
               f"{args.input.strip()} -> {target_encoder.decode(target_ids)}")
    return len(pngs)


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-attention", draw, argv)


if __name__ == "__main__":
    raise SystemExit(main())
