#!/usr/bin/env bash
# Train PROBLEM for MINUTES minutes on this machine, or TRAIN_STEPS steps if
# that comes first (a step budget holds on a machine shared with other work;
# HPARAMS_SET with the
# overrides in HPARAMS, if any; a checkpoint every SAVE_STEPS steps, default
# 500), average the last AVERAGE (default 5) checkpoints, decode
# EVAL_SPLIT with beam search and print the problem's score
# (BLEU for translation, EVALB F1 for parsing) and the wall time. EVAL_SPLIT
# empty: training only (a recipe's member, whose decoding is chosen after). MODEL
# (default transformer) trains another registered model, e.g. an RNN. SEED
# (t2t-trainer's --seed, default 1234) gives the seed spread. USR_DIR, if set, is
# the --t2t_usr_dir registering PROBLEM or HPARAMS_SET. THREADS, if set, sizes
# the trainer's and the decoder's two TensorFlow thread pools (one each for two
# runs side by side on a 2-core CPU: lever_table.py --parallel). Used by
# translate_multi30k.sh and parse_ptb_sample.sh, which set the variables.
# (RAW_DIR, not TMP: Python's tempfile would write its temporary files into TMP.)
set -euo pipefail
: "${PROBLEM:?}" "${HPARAMS_SET:?}" "${RAW_DIR:?}" "${EVAL_SPLIT?}"
MINUTES=${MINUTES:-60}
TRAIN_STEPS=${TRAIN_STEPS:-1000000}
ROOT=${ROOT:-runs/$PROBLEM}
DECODE=${DECODE:-batch_size=32}
SAVE_STEPS=${SAVE_STEPS:-500}
AVERAGE=${AVERAGE:-5}
HPARAMS=${HPARAMS:-}
MODEL=${MODEL:-transformer}
SEED=${SEED:-1234}
USR=()
if [ -n "${USR_DIR:-}" ]; then USR=(--t2t_usr_dir="$USR_DIR"); fi
POOLS=()
if [ -n "${THREADS:-}" ]; then
  POOLS=(--intra_op_parallelism_threads="$THREADS" --inter_op_parallelism_threads="$THREADS")
fi
start=$(date +%s)

EVAL=()  # the split's text files too, to decode after training
if [ -n "$EVAL_SPLIT" ]; then EVAL=(--eval_files_dir="$ROOT/eval" --eval_split="$EVAL_SPLIT"); fi
read -r src ref < <(t2t-datagen "${USR[@]}" --problem="$PROBLEM" --data_dir="$ROOT/data" \
    --tmp_dir="$RAW_DIR" "${EVAL[@]}" | awk '/^eval files:/ {print $3, $4}') || [ -z "$EVAL_SPLIT" ]
t2t-trainer "${USR[@]}" --problem="$PROBLEM" --model="$MODEL" --hparams_set="$HPARAMS_SET" \
    --hparams="$HPARAMS" --seed="$SEED" \
    --data_dir="$ROOT/data" --output_dir="$ROOT/train" --train_steps="$TRAIN_STEPS" \
    --train_minutes="$MINUTES" --save_checkpoints_steps="$SAVE_STEPS" --keep_checkpoint_max=60 \
    --eval_every_steps=1000 --eval_batches=20 "${POOLS[@]}"
trained=$(date +%s)
if [ -n "$EVAL_SPLIT" ]; then
  t2t-avg-all --model_dir="$ROOT/train" --output_dir="$ROOT/avg" --n="$AVERAGE"
  t2t-decoder "${USR[@]}" "${POOLS[@]}" --output_dir="$ROOT/avg" --decode_hparams="$DECODE" \
      --decode_from_file="$src" --decode_to_file="$ROOT/$EVAL_SPLIT.decoded" \
      --decode_reference="$ref"
fi
end=$(date +%s)
echo "training: $(( (trained - start) / 60 )) min; everything: $(( (end - start) / 60 )) min"
