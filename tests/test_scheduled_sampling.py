"""Scheduled sampling (Bengio et al. 2015) in the recurrent decoders: what it feeds in
training, that it equals teacher forcing before its warmup, that it obeys the decode
constraint, and that it ramps with the trainer's step on one and two replicas."""
import numpy as np
import pytest
import tensorflow as tf

from recurrent_toys import INPUTS, LUONG, TARGETS, VOCAB, make_model, small_hparams
from t2t_lite.builtins import load_builtins
from toys import ShortCopy, make_trainer

load_builtins()


def test_scheduled_sampling_feeds_the_models_own_tokens_in_training_only():
    model = make_model(LUONG, "dropout=0.0,scheduled_sampling_prob=1.0")
    features = {"inputs": INPUTS, "targets": TARGETS}
    forced = model(features).numpy()
    seed_state = model.sampling_seed.state.numpy()
    sampled = model(features, training=True).numpy()
    # With probability 1 no true token after the first is read: other targets, the
    # same draws, the same logits.
    model.sampling_seed.state.assign(seed_state)
    other_targets = (TARGETS + 3) % VOCAB
    assert np.array_equal(model({"inputs": INPUTS, "targets": other_targets},
                                training=True).numpy(), sampled)
    np.testing.assert_allclose(sampled[:, 0], forced[:, 0], atol=1e-6)  # the start symbol
    assert np.abs(sampled[:, 1:] - forced[:, 1:]).max() > 1e-3
    np.testing.assert_allclose(model(features).numpy(), forced)  # evaluation: teacher forcing


def test_scheduled_sampling_before_its_warmup_trains_exactly_as_teacher_forcing():
    """At probability 0 the sampling loop feeds the true tokens: its logits, and the
    gradients of a loss on them through the whole loop, equal teacher forcing's."""
    model = make_model(LUONG, "dropout=0.0,scheduled_sampling_prob=0.5,"
                              "scheduled_sampling_warmup_steps=10")
    model.training_step = lambda: tf.constant(0)
    features = {"inputs": INPUTS, "targets": TARGETS}
    loss_weights = tf.random.stateless_normal([3, 5, VOCAB], seed=[1, 2])

    def logits_and_gradients(training: bool):
        with tf.GradientTape() as tape:
            logits = model(features, training=training)
            loss = tf.reduce_sum(logits * loss_weights)
        return logits, tape.gradient(loss, model.trainable_variables)

    forced, forced_grads = logits_and_gradients(training=False)
    sampled, sampled_grads = logits_and_gradients(training=True)
    np.testing.assert_allclose(sampled.numpy(), forced.numpy(), atol=1e-5)
    assert len(sampled_grads) == len(forced_grads) == len(model.trainable_variables)
    for variable, got, want in zip(model.trainable_variables, sampled_grads, forced_grads):
        np.testing.assert_allclose(tf.convert_to_tensor(got).numpy(),
                                   tf.convert_to_tensor(want).numpy(), atol=1e-4,
                                   err_msg=variable.path)


class OnlyToken:
    """A decode constraint that allows one token id everywhere."""

    def __init__(self, token: int):
        self.token = token

    def initial_state(self, inputs, beam_size, max_decode_length):
        return {"steps": tf.zeros([tf.shape(inputs)[0] * beam_size], tf.int32)}

    def constrain(self, state, log_probs):
        return tf.where(tf.range(VOCAB)[None, :] == self.token, log_probs, -np.inf)

    def update(self, state, ids):
        return {"steps": state["steps"] + 1}


def test_scheduled_sampling_draws_what_the_decode_constraint_allows():
    model = make_model(LUONG, "dropout=0.0,scheduled_sampling_prob=1.0")
    model.sampling_constraint = OnlyToken(5)
    sampled = model({"inputs": INPUTS, "targets": TARGETS}, training=True).numpy()
    # Every token fed after the start symbol was a 5: teacher forcing on 5s.
    fives = tf.fill(TARGETS.shape, 5)
    np.testing.assert_allclose(sampled, model({"inputs": INPUTS, "targets": fives}).numpy(),
                               atol=1e-5)


@pytest.mark.parametrize("replicas", [1, 2])
def test_scheduled_sampling_ramps_up_with_the_trainers_step(copy_data, tmp_path, request,
                                                            replicas):
    # One layer a side: the ramp reads the trainer's step, not the depth, and each
    # layer more is one more sampling loop to trace (on two replicas, twice).
    hparams = small_hparams("scheduled_sampling_prob=0.5,scheduled_sampling_warmup_steps=8,"
                            "dropout=0.0,batch_size=64,max_length=10,length_bucket_step=0,"
                            "num_encoder_layers=1,num_decoder_layers=1")
    strategy = request.getfixturevalue("two_cpu_strategy") if replicas == 2 else None
    trainer = make_trainer(copy_data, tmp_path, hparams, strategy, model_name=LUONG,
                           problem=ShortCopy(), train_steps=2, save_checkpoints_steps=10**6,
                           save_checkpoints_minutes=1e6, log_every_steps=10**6,
                           eval_every_steps=10**6, evaluate=False)  # no dev pass at the end
    model = trainer.model
    features = {"inputs": INPUTS % model.vocab_size, "targets": TARGETS % model.vocab_size}
    # Step 0: nothing drawn yet, training reads the true tokens.
    np.testing.assert_allclose(model(features, training=True).numpy(),
                               model(features).numpy(), atol=1e-6)
    trainer.train()
    assert trainer.step == 2
    assert float(model.sampling_probability()) == pytest.approx(0.5 * 2 / 8)
    trainer.optimizer.iterations.assign(100)
    assert float(model.sampling_probability()) == pytest.approx(0.5)
