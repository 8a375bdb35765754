#!/usr/bin/env bash
# The parsing result of the README: train on wsj_0001-wsj_0159 of the treebank
# sample for MINUTES minutes, decode wsj_0160-wsj_0179 with the problem's decode
# settings (beam 21, alpha 0.3, extra_length 300, constrained to well-formed
# trees) and print EVALB F1 and the wall time.
#
#   bash benchmarks/parse_ptb_sample.sh
set -euo pipefail
PROBLEM=${PROBLEM:-parsing_english_ptb_sample}
HPARAMS_SET=${HPARAMS_SET:-transformer_parsing_tiny}
MINUTES=${MINUTES:-60}
TMP=${TMP:-../shared/data/ptb_sample}
ROOT=${ROOT:-runs/$PROBLEM}
DECODE=${DECODE:-batch_size=32}
start=$(date +%s)

read -r src ref < <(t2t-datagen --problem="$PROBLEM" --data_dir="$ROOT/data" \
    --tmp_dir="$TMP" --eval_files_dir="$ROOT/eval" --eval_split=dev |
    awk '/^eval files:/ {print $3, $4}')
t2t-trainer --problem="$PROBLEM" --model=transformer --hparams_set="$HPARAMS_SET" \
    --data_dir="$ROOT/data" --output_dir="$ROOT/train" --train_steps=1000000 \
    --train_minutes="$MINUTES" --save_checkpoints_steps=500 --keep_checkpoint_max=60 \
    --eval_every_steps=1000
trained=$(date +%s)
t2t-avg-all --model_dir="$ROOT/train" --output_dir="$ROOT/avg" --n=5
t2t-decoder --output_dir="$ROOT/avg" --decode_hparams="$DECODE" \
    --decode_from_file="$src" --decode_to_file="$ROOT/dev.trees" --decode_reference="$ref"
end=$(date +%s)
echo "training: $(( (trained - start) / 60 )) min; everything: $(( (end - start) / 60 )) min"
