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
from typing import Any, Sequence

from t2t_lite.bin import common


def parser() -> argparse.ArgumentParser:
    p = common.CommandParser(prog="t2t-attention", description=__doc__)
    common.add_registry_flags(p, required=False)
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
    if common.load_registrations(args):
        return 0
    if not args.output_dir:
        raise ValueError("--output_dir is required (the folder t2t-trainer wrote)")
    if not args.input.strip():
        raise ValueError("--input is empty: give the source sentence to look at")
    from t2t_lite import experiment as experiment_lib
    from t2t_lite import output_paths

    paths = output_paths.Paths("t2t-attention")
    paths.input_folder("--output_dir", args.output_dir)
    experiment = experiment_lib.resolve(args.problem, args.model, args.hparams_set,
                                        args.hparams, args.data_dir, args.output_dir,
                                        must_exist=True)
    paths.input_folder("--data_dir", experiment.data_dir)
    with paths.output_folder("--to", args.to, replaces_own=True) as staging:
        count = _draw(args, experiment, staging)
    print(f"wrote {count} PNGs and {os.path.join(args.to, 'index.html')}")
    return 0


def _draw(args: argparse.Namespace, experiment: Any, folder: str) -> int:
    """Decodes (unless --target is given) and writes the pictures and the page into
    ``folder``; returns the number of PNGs."""
    from t2t_lite.decoding.decoder import decode_hparams, input_length_limit
    from t2t_lite.decoding.search_decoder import BeamSearchDecoder
    from t2t_lite.models.base import NoAttentionError
    from t2t_lite.training.checkpoints import restore_model
    from t2t_lite.visualization import attention_maps
    from t2t_lite.visualization.attention_page import write_page
    from t2t_lite.visualization.heatmaps import write_heatmaps

    model = experiment.build_model()
    restore_model(model, args.output_dir, args.checkpoint_path)
    problem = experiment.problem
    encoders = problem.feature_encoders(experiment.data_dir)
    hparams = decode_hparams(args.decode_hparams, problem.decode_hparams_defaults())
    limit = input_length_limit(hparams, model)
    source_ids = attention_maps.encode_sentence(args.input, "--input", encoders["inputs"], limit)
    if args.target.strip():
        target_ids = attention_maps.encode_sentence(args.target, "--target",
                                                    encoders["targets"], limit)
    else:
        search = BeamSearchDecoder(model, hparams.beam_size, hparams.alpha,
                                   constraint=problem.decode_constraint(experiment.data_dir))
        target_ids = attention_maps.best_decode(search, source_ids, hparams.extra_length)
        print(f"decoded: {encoders['targets'].decode(target_ids)}")
    try:
        maps = attention_maps.attention_maps(model, source_ids, target_ids, encoders["inputs"],
                                             encoders["targets"])
    except NoAttentionError as error:
        raise ValueError(f"{error}: pick a model with attention") from None
    pngs = write_heatmaps(maps, folder, args.dpi)
    write_page(maps, os.path.join(folder, "index.html"),
               f"{args.input.strip()} -> {encoders['targets'].decode(target_ids)}")
    return len(pngs)


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-attention", draw, argv)


if __name__ == "__main__":
    raise SystemExit(main())
