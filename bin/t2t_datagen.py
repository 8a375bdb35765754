"""t2t-datagen: download a problem's raw data, build its vocabulary, write shards."""
from __future__ import annotations

import argparse
import contextlib
import os
from typing import Sequence

from t2t_lite.bin import common


def parser() -> argparse.ArgumentParser:
    p = common.CommandParser(prog="t2t-datagen", description=__doc__)
    p.add_argument("--problem", help="registered problem name (see --registry_help)")
    p.add_argument("--data_dir", help="where the vocabulary and TFRecord shards go")
    p.add_argument("--tmp_dir", help="where raw downloads are kept (reused when present)")
    p.add_argument("--eval_files_dir",
                   help="also write the raw source and reference text of --eval_split here, "
                        "for t2t-decoder --decode_from_file / --decode_reference")
    p.add_argument("--eval_split", default="test", help="split (or named test set) to write")
    common.add_data_options_flag(p)
    common.add_encode_processes_flag(p)
    p.acts_only("--eval_split", "with --eval_files_dir", lambda args: bool(args.eval_files_dir))
    common.add_usr_dir_flags(p)
    return p


def generate(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    if common.load_registrations(args):
        return 0
    from t2t_lite import output_paths
    from t2t_lite.data import data_options, text_files
    for flag in ("problem", "data_dir"):
        if not getattr(args, flag):
            raise ValueError(f"--{flag} is required")
    paths = output_paths.Paths("t2t-datagen")
    for flag in ("data_dir", "tmp_dir", "eval_files_dir"):
        if getattr(args, flag):
            setattr(args, flag, paths.shared_folder(f"--{flag}", getattr(args, flag)))
    problem = common.generated_problem(args.problem, args)
    tmp_dir = args.tmp_dir or args.data_dir
    options = data_options.prepare(problem, args.data_dir, args.data_options, tmp_dir)
    eval_paths = ([os.path.join(args.eval_files_dir, name)
                   for name in problem.eval_file_names(args.eval_split)]
                  if args.eval_files_dir else [])
    with contextlib.ExitStack() as claims:
        # Claimed before any work: a user's file of the same name is refused, not replaced.
        targets = [claims.enter_context(paths.output_file("--eval_files_dir", path,
                                                          new_folder=True))
                   for path in eval_paths]
        common.generate_data(problem, args.data_dir, tmp_dir, options)
        for path, lines in zip(targets, problem.eval_lines(tmp_dir, args.eval_split)
                               if eval_paths else ()):
            with common.writing("while writing the eval files", "--eval_files_dir", path):
                text_files.write_lines_atomically(path, lines)
    if eval_paths:
        print(f"eval files: {' '.join(eval_paths)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return common.run_main("t2t-datagen", generate, argv)


if __name__ == "__main__":
    raise SystemExit(main())
