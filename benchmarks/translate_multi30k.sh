#!/usr/bin/env bash
# The Multi30k result of the README: train a Transformer for MINUTES minutes on
# this machine, average the last 5 checkpoints, decode test_2016_flickr with beam
# search and print BLEU (cased, lowercased, tokenized) and the wall time.
#
#   bash benchmarks/translate_multi30k.sh                    # En->De, 80 minutes
#   PROBLEM=translate_enfr_multi30k bash benchmarks/translate_multi30k.sh
#
# Raw files are read from TMP (../shared/data/multi30k on a development machine,
# downloaded from the Multi30k repository into TMP when absent).
set -euo pipefail
PROBLEM=${PROBLEM:-translate_ende_multi30k}
HPARAMS_SET=${HPARAMS_SET:-transformer_multi30k}
MINUTES=${MINUTES:-80}
TMP=${TMP:-../shared/data/multi30k}
ROOT=${ROOT:-runs/$PROBLEM}
DECODE=${DECODE:-beam_size=4,alpha=0.6,batch_size=64}
start=$(date +%s)

read -r src ref < <(t2t-datagen --problem="$PROBLEM" --data_dir="$ROOT/data" \
    --tmp_dir="$TMP" --eval_files_dir="$ROOT/eval" --eval_split=test |
    awk '/^eval files:/ {print $3, $4}')
t2t-trainer --problem="$PROBLEM" --model=transformer --hparams_set="$HPARAMS_SET" \
    --data_dir="$ROOT/data" --output_dir="$ROOT/train" --train_steps=1000000 \
    --train_minutes="$MINUTES" --save_checkpoints_steps=500 --keep_checkpoint_max=60 \
    --eval_every_steps=1000 --eval_batches=20
trained=$(date +%s)
t2t-avg-all --model_dir="$ROOT/train" --output_dir="$ROOT/avg" --n=5
t2t-decoder --output_dir="$ROOT/avg" --decode_hparams="$DECODE" \
    --decode_from_file="$src" --decode_to_file="$ROOT/test.decoded" --decode_reference="$ref"
end=$(date +%s)
echo "training: $(( (trained - start) / 60 )) min; everything: $(( (end - start) / 60 )) min"
