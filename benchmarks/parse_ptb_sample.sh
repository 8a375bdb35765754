#!/usr/bin/env bash
# The parsing result of docs/RESULTS.md: train on wsj_0001-wsj_0159 of the treebank
# sample for an hour with word dropout (alpha 0.25) and a checkpoint every 200
# steps, average the last 10, decode wsj_0160-wsj_0179 with the problem's decode
# settings (beam 21, alpha 0.3, extra_length 300, constrained to well-formed
# trees) and print EVALB F1 and the wall time. HPARAMS= (empty) trains without
# word dropout.
export PROBLEM=${PROBLEM:-parsing_english_ptb_sample_lexical}
export HPARAMS_SET=${HPARAMS_SET:-transformer_parsing_small}
export MINUTES=${MINUTES:-60}
export HPARAMS=${HPARAMS-word_dropout=0.25}
export SAVE_STEPS=${SAVE_STEPS:-200}
export AVERAGE=${AVERAGE:-10}
export RAW_DIR=${RAW_DIR:-../shared/data/ptb_sample}
export EVAL_SPLIT=dev
exec bash "$(dirname "$0")/train_and_score.sh"
