#!/usr/bin/env bash
# Back-translation on Multi30k, end to end, from files only (Edunov et al. 2018):
# the README's "Your own data" parts and nothing else, so that a user can copy it
# with their own monolingual text in place of corpus/mono.de.
#
#   bash benchmarks/back_translation.sh            # STEPS=2000 a model, ROOT=runs/bt
#
# 1. Split Multi30k train into a parallel half (lines 1-HALF, both languages) and a
#    German-only half (the rest, its English thrown away).
# 2. Train De->En on the parallel half; keep its best checkpoint by val BLEU.
# 3. Back-translate the German-only half into English twice: beam search (beam 5)
#    and unrestricted sampling (temperature 1).
# 4. Train En->De four times with the same step budget and vocabulary: the parallel
#    half alone, plus the beam back-translations, plus the sampled ones (each a
#    second training corpus beside the parallel half, half of the examples each:
#    translate_files' train2 at weight 1), plus the beam ones tagged (train2_tag=<BT>,
#    Caswell et al. 2019: each back-translated source begins with <BT>, a piece
#    added to the vocabulary); each keeps its best checkpoint by val BLEU (settings
#    chosen on val), then decodes test_2016_flickr once and prints its BLEU.
# Every step skips work whose output exists, so a stopped run goes on where it was.
set -euo pipefail
RAW_DIR=${RAW_DIR:-../shared/data/multi30k}
ROOT=${ROOT:-runs/bt}
STEPS=${STEPS:-2000}
HALF=${HALF:-14500}
HPARAMS_SET=${HPARAMS_SET:-transformer_multi30k_tiny}
HPARAMS=${HPARAMS:-}
SEED=${SEED:-1234}
EVAL_EVERY=${EVAL_EVERY:-500}
DECODE=${DECODE:-beam_size=4,alpha=0.6,batch_size=64}
C=$ROOT/corpus
mkdir -p "$C"

# 1. The corpus as a user would have it: plain files, one sentence a line.
if [ ! -f "$C/mono.de" ]; then
    for lang in en de; do
        # sed, not head: head's early exit would fail the pipe under pipefail.
        zcat "$RAW_DIR/train.$lang.gz" | sed -n "1,${HALF}p" > "$C/para.$lang"
        zcat "$RAW_DIR/val.$lang.gz" > "$C/val.$lang"
        zcat "$RAW_DIR/test_2016_flickr.$lang.gz" > "$C/test.$lang"
    done
    zcat "$RAW_DIR/train.de.gz" | sed -n "$((HALF + 1)),\$p" > "$C/mono.de.partial"
    mv "$C/mono.de.partial" "$C/mono.de"
fi

train() {  # train NAME DATA_OPTIONS: datagen, training with the best kept by val BLEU
    local name=$1 options=$2
    t2t-datagen --problem=translate_files --data_dir="$ROOT/$name/data" \
        --data_options="$options"
    t2t-trainer --problem=translate_files --model=transformer \
        --hparams_set="$HPARAMS_SET" --hparams="$HPARAMS" --seed="$SEED" \
        --data_dir="$ROOT/$name/data" --output_dir="$ROOT/$name/train" \
        --train_steps="$STEPS" --save_checkpoints_steps="$EVAL_EVERY" \
        --eval_every_steps="$EVAL_EVERY" --eval_batches=20 \
        --decode_eval_every_steps="$EVAL_EVERY" --decode_eval_examples=1014 \
        --decode_eval_hparams="$DECODE" --best_checkpoint_metric=bleu
}

# 2. De->En on the parallel half. Its vocabulary (both languages of the parallel
#    half) is every later model's too, so that only the training pairs differ.
train de_en "train=$C/para,dev=$C/val,test=$C/test,source_lang=de,target_lang=en"
vocab=$(ls "$ROOT"/de_en/data/vocab.*.model)

# 3. Back-translate the German-only half.
for how in beam sample; do
    out=$C/mono.$how.en
    [ -f "$out" ] && continue
    if [ "$how" = beam ]; then
        hparams="beam_size=5,alpha=0.6,batch_size=64"
    else
        hparams="sampling_method=random,beam_size=1,sampling_temp=1.0,sampling_seed=$SEED,batch_size=64"
    fi
    t2t-decoder --output_dir="$ROOT/de_en/train/best" --decode_hparams="$hparams" \
        --decode_from_file="$C/mono.de" --decode_to_file="$out"
done

# 4. En->De: the parallel half alone, then with each kind of back-translation as a
#    second corpus (the prefix bt_HOW: its .en the back-translations, its .de mono.de).
for how in beam sample; do
    [ -f "$C/bt_$how.de" ] && continue
    # A sampled subword may be a byte piece that decodes to a control character (55
    # of 14,500 sampled lines here, none by beam), which t2t-datagen refuses: drop
    # them, as any corpus is cleaned (tab and newline kept).
    tr -d '\000-\010\013-\037\177' < "$C/mono.$how.en" > "$C/bt_$how.en"
    cp "$C/mono.de" "$C/bt_$how.de"
done
common="dev=$C/val,test=$C/test,source_lang=en,target_lang=de,vocab_model=$vocab"
train en_de_parallel "train=$C/para,$common"
train en_de_bt_beam "train=$C/para,train2=$C/bt_beam,$common"
train en_de_bt_sample "train=$C/para,train2=$C/bt_sample,$common"
train en_de_bt_beam_tagged "train=$C/para,train2=$C/bt_beam,train2_tag=<BT>,$common"
for name in en_de_parallel en_de_bt_beam en_de_bt_sample en_de_bt_beam_tagged; do
    echo "== $name: best on val $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); b=r["best"]; print("step", b["step"], "BLEU", b["value"])' "$ROOT/$name/train/best.json")"
    t2t-decoder --output_dir="$ROOT/$name/train/best" --decode_hparams="$DECODE" \
        --decode_from_file="$C/test.en" --decode_to_file="$ROOT/$name/test.decoded" \
        --decode_reference="$C/test.de"
done
