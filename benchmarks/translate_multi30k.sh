#!/usr/bin/env bash
# The Multi30k result of docs/RESULTS.md: 80 minutes of training on this machine,
# last 5 checkpoints averaged, test_2016_flickr decoded with beam 4, BLEU printed.
#
#   bash benchmarks/translate_multi30k.sh                    # En->De
#   PROBLEM=translate_enfr_multi30k bash benchmarks/translate_multi30k.sh
#
# Raw files are read from RAW_DIR (../shared/data/multi30k on a development machine;
# downloaded from the Multi30k repository into RAW_DIR when absent).
export PROBLEM=${PROBLEM:-translate_ende_multi30k}
export HPARAMS_SET=${HPARAMS_SET:-transformer_multi30k}
export MINUTES=${MINUTES:-80}
export RAW_DIR=${RAW_DIR:-../shared/data/multi30k}
export EVAL_SPLIT=test
export DECODE=${DECODE:-beam_size=4,alpha=0.6,batch_size=64}
exec bash "$(dirname "$0")/train_and_score.sh"
