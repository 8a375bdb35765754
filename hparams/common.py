"""The training hparams every model's sets build on (T2T's ``basic_params1``).

Keys read by the trainer, the input pipeline and the optimizer, whatever the
model, each declared with its range (``t2t_lite/hparam.py``; model sets add
their own shape keys):

batching        batch_size (tokens per replica per step, source or target
                side, whichever is longer), max_length, length_bucket_step
                (bucket growth, 1.1 as in T2T; 0 = batches that mix lengths, of
                batch_size // max_length examples), gradient_accumulation_steps
loss            label_smoothing, loss_normalizer ("tokens": the summed loss over
                the number of target tokens, as T2T; "sentences": over the number
                of sentences, as the RNN papers' objective, which sums a
                sentence's token losses), guided_alignment_weight (Garg et al.'s
                guided alignment, OpenNMT-tf's name: one cross-attention head of
                the penultimate decoder layer learns the word alignments of the
                training data, this weight times its cross-entropy added to the
                loss; 0 = off; the Transformer, with data made with alignments:
                t2t_lite/training/guided_alignment.py)
optimizer       optimizer ("adam", "sgd", "adadelta"; tensor2tensor's "adam_w",
                "adafactor", "momentum", "multistep_adam": see
                t2t_lite/training/optimizers.py), optimizer_adam_beta1 / beta2 /
                epsilon (adam, adam_w, multistep_adam), optimizer_adadelta_rho /
                epsilon, optimizer_momentum_momentum / nesterov (momentum),
                optimizer_adafactor_* (adafactor: Keras's Adafactor, whose
                fixed choices the ranges state: beta1 0, factored, parameter
                scale, decay_type "pow" with memory_exponent; beta2, declared
                for T2T's sets, is not read: only T2T's "adam" decay type, which
                Keras lacks, read it), weight_decay (T2T's: weight_decay *
                the L2 loss of the weights but biases and norm shifts added to
                the loss, under every optimizer; adam_w also decays each weight
                by weight_decay a step, decoupled, as T2T's AdamW did),
                clip_grad_norm (rescale the gradient, all replicas summed, to
                this global norm when it is larger; 0 = off)
data            word_dropout (alpha of Kiperwasser & Goldberg's word dropout: a
                training input word seen c times becomes <UNK> with probability
                alpha / (alpha + c); 0 = off; problems with a word-level
                vocabulary only, others refuse it; see t2t_lite/data/word_dropout.py),
                sentencepiece_alpha (subword regularization: each training sentence
                segmented afresh each epoch; a BPE vocabulary drops each merge with
                this probability, a unigram one samples with its probabilities to
                this power; 0 = off, else in (0, 1]), sentencepiece_nbest_size (a
                unigram vocabulary's candidates: -1 all, N > 1 the N best; 0 for
                BPE); sentencepiece vocabularies only, others refuse them; see
                t2t_lite/data/subword_sampling.py)
faults          skip_nonfinite_steps (a step whose loss or gradient is NaN or Inf is
                skipped, the weights untouched, instead of stopping the run)
averaging       moving_average_decay (an exponential moving average of the weights,
                kept in the checkpoints, which dev evaluation, keep-best, the decoder
                and the exports read in their place; 0 = off; e.g. 0.9999 as
                OpenNMT-tf: t2t_lite/training/moving_average.py)
speed           dtype ("float32"; "mixed_bfloat16" or "mixed_float16": Keras
                mixed precision, float32 variables, softmax, layer norm and
                loss; see t2t_lite/precision.py), xla (compile the training
                step with XLA, one program per batch shape; one replica)
learning rate   learning_rate (the rate, or a scale on rsqrt_decay),
                learning_rate_schedule ("rsqrt_decay": the Transformer's
                d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), with
                learning_rate_warmup_steps; "constant"; "step_decay": constant
                until learning_rate_decay_start_step, then multiplied by
                learning_rate_decay_rate every learning_rate_decay_steps, as
                the RNN papers halved theirs each (half) epoch; "linear_warmup":
                step_decay's rate, reached linearly over the first
                learning_rate_warmup_steps, for the recurrent sets, whose
                constant rate otherwise hits untrained weights at full size);
                or tensor2tensor's product of factors, "constant*linear_warmup*
                rsqrt_decay*rsqrt_hidden_size" (hparams/schedule_grammar.py
                lists them; t2t_lite/training/schedules.py computes them), which
                read learning_rate_constant (the rate there: learning_rate is
                not read, as in T2T), learning_rate_decay_staircase (exp_decay),
                and under "legacy" learning_rate_decay_scheme ("none", "noam",
                "exp", "sqrt")
"""
from t2t_lite.hparam import (HParams, Range, at_least, between, fraction, off_or_above, one_of,
                             positive)
from t2t_lite.hparams.t2t_keys import add_t2t_keys
from t2t_lite.hparams.schedule_grammar import (OPTIMIZERS, SCHEDULES, optimizer_range,
                                               schedule_range)
from t2t_lite.precision import DTYPES

# The choices of the string keys; the trainer looks them up by these names.
# OPTIMIZERS and SCHEDULES are schedule_grammar.py's (T2T's schedule strings are
# checked there).
LOSS_NORMALIZERS = ("tokens", "sentences")
# T2T's legacy schedule's decay schemes we compute (its cosine, piecewise and
# cyclelinear10x read keys we do not declare).
DECAY_SCHEMES = ("none", "noam", "exp", "sqrt")
# Keras's Adafactor fixes what T2T's made a choice: only T2T's default passes.
ADAFACTOR_DECAY_TYPES = ("pow",)


def _sampling_is_on(hparams: HParams) -> str | None:
    """The complaint about a subword-sampling key set while sampling is off."""
    if hparams.sentencepiece_nbest_size and not hparams.sentencepiece_alpha:
        return (f"sentencepiece_nbest_size={hparams.sentencepiece_nbest_size} shapes subword "
                "sampling, which is off (sentencepiece_alpha=0): set sentencepiece_alpha "
                "too, or leave sentencepiece_nbest_size at 0")
    return None


def _alignments_keep_their_tokens(hparams: HParams) -> str | None:
    """The complaint about guided alignment over sampled segmentations."""
    if hparams.guided_alignment_weight and hparams.sentencepiece_alpha:
        return (f"guided_alignment_weight={hparams.guided_alignment_weight} supervises "
                "attention with token links made for the data's one segmentation, and "
                f"sentencepiece_alpha={hparams.sentencepiece_alpha} segments the sentences "
                "afresh: set one of them to 0")
    return None


def basic_params() -> HParams:
    """Training defaults: Adam with the Transformer's settings, no clipping."""
    return add_t2t_keys(HParams(
        batch_size=at_least(1, 4096),
        max_length=at_least(1, 256),
        length_bucket_step=off_or_above(1, 1.1),
        gradient_accumulation_steps=at_least(1, 1),
        label_smoothing=fraction(0.1),
        word_dropout=at_least(0, 0.0),
        sentencepiece_alpha=between(0, 1, 0.0),
        sentencepiece_nbest_size=at_least(-1, 0),
        loss_normalizer=one_of(*LOSS_NORMALIZERS),
        guided_alignment_weight=at_least(0, 0.0),
        optimizer=optimizer_range(),
        optimizer_adam_beta1=fraction(0.9),
        optimizer_adam_beta2=fraction(0.98),
        optimizer_adam_epsilon=positive(1e-9),
        optimizer_adadelta_rho=fraction(0.95),
        optimizer_adadelta_epsilon=positive(1e-6),
        optimizer_momentum_momentum=fraction(0.9),
        optimizer_momentum_nesterov=False,
        optimizer_adafactor_beta1=Range(0.0, lambda v: v == 0,
                                        "0.0 (Keras's Adafactor keeps no first moment)"),
        optimizer_adafactor_beta2=fraction(0.999),
        optimizer_adafactor_factored=Range(True, lambda v: v,
                                           "true (Keras's Adafactor always factors)"),
        optimizer_adafactor_decay_type=one_of(*ADAFACTOR_DECAY_TYPES),
        optimizer_adafactor_memory_exponent=positive(0.8),
        optimizer_adafactor_clipping_threshold=positive(1.0),
        optimizer_adafactor_multiply_by_parameter_scale=Range(
            True, lambda v: v, "true (Keras's Adafactor always scales by the parameters)"),
        weight_decay=at_least(0, 0.0),
        clip_grad_norm=at_least(0, 0.0),
        skip_nonfinite_steps=False,
        moving_average_decay=fraction(0.0),
        learning_rate=positive(1.0),
        learning_rate_schedule=schedule_range(),
        learning_rate_constant=positive(1.0),
        learning_rate_warmup_steps=at_least(1, 4000),
        learning_rate_decay_start_step=at_least(0, 0),
        learning_rate_decay_steps=at_least(1, 1),
        learning_rate_decay_rate=positive(1.0),
        learning_rate_decay_staircase=False,
        learning_rate_decay_scheme=one_of(*DECAY_SCHEMES),
        dtype=one_of(*DTYPES),
        xla=False,
    )).add_rule(_sampling_is_on).add_rule(_alignments_keep_their_tokens)
