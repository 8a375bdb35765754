"""The tiny Transformer and the batch that test_transformer.py and
test_transformer_decoding.py share."""
import numpy as np
import tensorflow as tf

from t2t_lite.contracts.decode_state import decode_loop_shapes
from t2t_lite.models.base import shift_right
from t2t_lite.models.transformer import Transformer

from toys import tiny_transformer

VOCAB = 20
INPUTS = tf.constant([[3, 4, 5, 0], [6, 7, 0, 0]])
TARGETS = tf.constant([[8, 9, 1, 0, 0], [5, 6, 7, 2, 1]])

# Shaw et al.'s relative positions, clipped at 2 (so that the few steps of a test see
# clipped distances), without absolute positions: what transformer_relative sets.
RELATIVE = {"self_attention_type": "dot_product_relative", "max_relative_position": 2,
            "position_embedding": "none"}


def tiny_model(**overrides) -> Transformer:
    return tiny_transformer(VOCAB, **{"max_length": 16, **overrides})


def logits(model: Transformer, inputs: tf.Tensor, targets: tf.Tensor, **kwargs) -> np.ndarray:
    return model({"inputs": inputs, "targets": targets}, **kwargs).numpy()


def greedy_teacher_forced(model: Transformer, inputs: tf.Tensor, targets: tf.Tensor,
                          max_decode_length: tf.Tensor) -> tf.Tensor:
    """Feeds targets one step at a time through decode_step; logits [B, T, V]."""
    state = model.initial_decode_state(model.encode(inputs), max_decode_length)
    previous = shift_right(targets)
    length = tf.shape(targets)[1]
    outputs = tf.TensorArray(tf.float32, size=length)

    def body(step, state, outputs):
        step_logits, state = model.decode_step(previous[:, step], step, state)
        return step + 1, state, outputs.write(step, step_logits)

    loop_vars = [tf.constant(0), state, outputs]
    _, state, outputs = tf.while_loop(lambda step, *_: step < length, body, loop_vars,
                                      shape_invariants=decode_loop_shapes(loop_vars))
    return tf.transpose(outputs.stack(), [1, 0, 2])
