"""tensor2tensor's hparams keys (hparams/t2t_keys.py) and HParams' T2T API: aliases
through every path, refused keys in one line, collecting_errors, del_hparam / get,
and every key T2T's sets declare known to ours."""
import inspect

import pytest

from t2t_lite import registry
from t2t_lite.builtins import load_builtins
from t2t_lite.hparam import HParams, HParamsError, collecting_errors
from t2t_lite.hparams.lstm import lstm_luong_multi30k, lstm_sutskever
from t2t_lite.hparams.t2t_key_tables import NO_EFFECT, ONLY_AT
from t2t_lite.hparams.t2t_keys import ALIASES
from t2t_lite.hparams.transformer import transformer_base, transformer_base_v1

load_builtins()


def test_an_alias_through_attribute_parse_dict_get_and_in():
    h = transformer_base()
    h.num_hidden_layers = 2
    assert (h.num_encoder_layers, h.num_decoder_layers, h.num_hidden_layers) == (2, 2, 2)
    h.parse("num_hidden_layers=3,pos=emb")
    assert (h.num_encoder_layers, h.position_embedding, h.pos) == (3, "learned", "emb")
    h.override_from_dict({"pos": None, "self_attention_type": "dot_product_relative",
                          "max_relative_position": 20})
    assert h.position_embedding == "none" and h.pos is None
    h.set_hparam("activation_dtype", "bfloat16")
    assert h.dtype == "mixed_bfloat16" and h.get("activation_dtype") == "bfloat16"
    assert "pos" in h and "num_hidden_layers" in h and "nope" not in h
    assert h.get("nope", 7) == 7 and h.get("ffn_layer") == "dense_relu_dense"
    h.num_encoder_layers = 4
    with pytest.raises(HParamsError, match="num_encoder_layers=4, num_decoder_layers=3"):
        h.num_hidden_layers


def test_aliases_are_never_stored_and_copies_keep_them():
    h = transformer_base().parse("num_hidden_layers=2,optimizer_multistep_accumulate_steps=8,"
                                 "symbol_modality_num_shards=16")
    assert not set(h.values()) & set(h.aliases()) and "symbol_modality_num_shards" in h.aliases()
    assert set(HParams.from_json(h.to_json()).values()) == set(h.values())
    assert h.gradient_accumulation_steps == 8 and h.symbol_modality_num_shards == 16
    again = transformer_base().override_from_dict(HParams.from_json(h.to_json()).values())
    assert again == h and again.num_hidden_layers == 2
    twin = h.copy()
    twin.pos = "emb"
    assert twin.position_embedding == "learned" and h.position_embedding == "timing"
    assert twin.symbol_modality_num_shards == 16
    h.optimizer_multistep_accumulate_steps = 0
    assert h.gradient_accumulation_steps == 1


def test_a_key_and_its_alias_disagreeing_in_one_parse_are_refused():
    h = transformer_base()
    with pytest.raises(HParamsError, match="^--hparams: num_hidden_layers=2 and "
                       "num_encoder_layers=3 disagree"):
        h.parse("num_hidden_layers=2,num_encoder_layers=3", source="--hparams")
    assert h.num_encoder_layers == 6
    h.parse("num_hidden_layers=2,num_encoder_layers=2")
    with pytest.raises(HParamsError, match="activation_dtype='float32' and dtype="):
        h.override_from_dict({"activation_dtype": "float32", "dtype": "mixed_bfloat16"})


def test_layer_sequences_set_normalize_before_in_pairs():
    h = transformer_base_v1()
    assert (h.layer_preprocess_sequence, h.layer_postprocess_sequence) == ("none", "dan")
    h.layer_preprocess_sequence = "n"  # waits for its partner
    h.layer_postprocess_sequence = "da"
    assert h.check().normalize_before is True
    h.layer_postprocess_sequence = "dan"  # T2T's own order back to post-norm
    h.layer_preprocess_sequence = "none"
    assert h.check().normalize_before is False
    with pytest.raises(HParamsError, match="'n' with layer_postprocess_sequence='dan' is "
                       "not a block"):
        transformer_base_v1().parse("layer_preprocess_sequence=n")
    with pytest.raises(HParamsError, match="only at 'n' or 'none', got 'nd'"):
        h.layer_preprocess_sequence = "nd"
    h.parse("layer_preprocess_sequence=n,layer_postprocess_sequence=da")
    h.normalize_before = False  # set directly: the sequences follow it
    assert h.check().layer_preprocess_sequence == "none"


@pytest.mark.parametrize("key,value,pattern", [
    ("attention_mechanism", "luong", "only at 'luong' or 'bahdanau'.*on an attention set"),
    ("ffn_layer", "conv_relu_conv", "only at 'dense_relu_dense'"),
    ("initializer", "orthogonal", "only at 'uniform_unit_scaling'.*Glorot uniform"),
    ("initializer_gain", 1.5, "only at 1.0"),
    ("proximity_bias", True, "only at False"),
    ("sampling_temp", 0.5, "--decode_hparams"),
    ("weight_dtype", "bfloat16", "only at 'float32'"),
    ("pos", "emb_timing", "only at 'timing' or 'emb'"),
])
def test_refused_keys_and_values_stop_in_one_line(key, value, pattern):
    h = transformer_base()
    with pytest.raises(HParamsError, match=pattern) as error:
        setattr(h, key, value)
    assert "\n" not in str(error.value)
    with pytest.raises(HParamsError, match=pattern):
        h.parse(f"{key}={value}")
    assert h == transformer_base()


def test_no_effect_and_default_only_keys_accept_what_t2t_meant():
    h = transformer_base()
    h.daisy_chain_variables = False
    h.grad_noise_scale = 0  # an int where T2T's float default is
    h.moe_num_experts = 16
    h.learning_rate_minimum = None
    h.bottom = {}
    assert (h.daisy_chain_variables, h.moe_num_experts, h.use_target_space_embedding) == \
        (False, 16, False)
    assert h == transformer_base()


def test_sets_own_keys_come_before_aliases():
    h = lstm_sutskever()  # the LSTM sets' own initializer and dropout
    assert h.initializer == "uniform" and "dropout" in h.values()
    with pytest.raises(HParamsError, match="must be one of 'uniform', 'keras'"):
        h.initializer = "uniform_unit_scaling"
    h.num_hidden_layers = 2
    assert h.num_decoder_layers == 2 and h.multiply_embedding_mode == "none"
    with pytest.raises(HParamsError, match="a real key"):
        h.add_alias("dropout", ALIASES["pos"]())


def test_del_hparam_get_and_add_hparam():
    h = transformer_base()
    h.add_hparam("my_key", 3)
    with pytest.raises(HParamsError, match="already exists"):
        h.add_hparam("my_key", 4)
    h.add_hparam("num_hidden_layers", 2)  # T2T's key, declared here already: set
    assert h.num_encoder_layers == 2 and h.get("my_key") == 3
    h.del_hparam("my_key")
    h.del_hparam("never_there")  # as in T2T
    assert "my_key" not in h and h.get("my_key") is None
    with pytest.raises(HParamsError, match="read by t2t-lite's models"):
        h.del_hparam("num_heads")


def _users_set(hparams):
    hparams.num_hidden_layerz = 2
    hparams.hidden_size = 256
    hparams.ffn_layer = "conv_hidden_relu"
    hparams.set_hparam("relu_dropout", 1.5)
    return hparams


def test_collecting_errors_names_each_bad_line_in_one_error():
    first = inspect.getsourcelines(_users_set)[1]
    with pytest.raises(HParamsError) as error:
        with collecting_errors("hparams set my_set"):
            hparams = _users_set(transformer_base())
    message = str(error.value)
    assert message.startswith("hparams set my_set: ") and "\n" not in message
    places = [f"test_t2t_hparams.py:{first + n}" for n in (1, 3, 4)]
    assert [message.index(p) for p in places] == sorted(message.index(p) for p in places)
    assert "num_hidden_layerz'; did you mean 'num_hidden_layers'" in message
    assert "'ffn_layer'" in message and "'relu_dropout' must be in" in message
    assert f"test_t2t_hparams.py:{first + 2}" not in message
    assert hparams.hidden_size == 256  # the good statements ran
    with collecting_errors("x"):
        with pytest.raises(AttributeError, match="unknown hparam 'hidden_sise'"):
            hparams.hidden_sise  # a read raises at once
    with pytest.raises(HParamsError):  # outside the block, nothing changed
        hparams.ffn_layer = "conv"


# Every key tensor2tensor's sets declare, as read from T2T: basic_params1 (common_hparams.py)
# with its defaults, and what transformer_base_v1 / v2 / v3 and lstm_seq2seq / lstm_attention_base
# set or add. T2T_NOT_HONOURED: T2T's value that ours do not mean the same by (or refuse).
T2T_BASIC = dict(
    batch_size=4096, batch_shuffle_size=512, use_fixed_batch_size=False, num_hidden_layers=4,
    kernel_height=3, kernel_width=1, hidden_size=64, compress_steps=0, dropout=0.2,
    clip_grad_norm=2.0, grad_noise_scale=0.0, summarize_grads=False, mlperf_mode=False,
    summarize_vars=False, initializer="orthogonal", initializer_gain=1.5, label_smoothing=0.1,
    optimizer="adam", optimizer_adam_epsilon=1e-6, optimizer_adam_beta1=0.85,
    optimizer_adam_beta2=0.997, optimizer_momentum_momentum=0.9,
    optimizer_momentum_nesterov=False, optimizer_adafactor_beta1=0.0,
    optimizer_adafactor_beta2=0.999, optimizer_adafactor_factored=True,
    optimizer_adafactor_decay_type="pow", optimizer_adafactor_memory_exponent=0.8,
    optimizer_adafactor_clipping_threshold=1.0,
    optimizer_adafactor_multiply_by_parameter_scale=True,
    optimizer_multistep_accumulate_steps=0,
    mixed_precision_optimizer_loss_scaler="exponential",
    mixed_precision_optimizer_init_loss_scale=2 ** 15, optimizer_zero_grads=False,
    weight_decay=1e-6, weight_noise=0.0, learning_rate_schedule="legacy",
    learning_rate_constant=1.0, learning_rate_decay_scheme="none",
    learning_rate_decay_steps=5000, learning_rate_decay_staircase=False,
    learning_rate_minimum=None, learning_rate_decay_rate=1.0, learning_rate_warmup_steps=100,
    learning_rate_cosine_cycle_steps=250000, learning_rate=0.1, sampling_method="argmax",
    sampling_temp=1.0, sampling_keep_top_k=-1, factored_logits=False,
    multiply_embedding_mode="sqrt_depth", moe_hidden_sizes="2048", moe_num_experts=64, moe_k=2,
    moe_loss_coef=1e-2, layer_preprocess_sequence="none", layer_postprocess_sequence="dan",
    layer_prepostprocess_dropout=0.1, layer_prepostprocess_dropout_broadcast_dims="",
    symbol_dropout=0.0, norm_type="layer", norm_epsilon=1e-6, vocab_divisor=1, min_length=0,
    max_length=0, pack_dataset=False, use_custom_ops=True, split_targets_chunk_length=0,
    split_targets_max_chunks=100, split_targets_strided_training=False, min_length_bucket=8,
    length_bucket_step=1.1, eval_drop_long_sequences=False, eval_run_autoregressive=False,
    shared_embedding_and_softmax_weights=False, shared_embedding=False,
    symbol_modality_num_shards=1, bottom={}, loss={}, name={}, top={}, weights_fn={},
    max_input_seq_length=0, max_target_seq_length=0, split_to_length=0,
    video_num_input_frames=1, video_num_target_frames=1, prepend_mode="none",
    scheduled_sampling_prob=0.0, scheduled_sampling_method="parallel",
    scheduled_sampling_warmup_steps=50000, scheduled_sampling_gold_mixin_prob=0.5,
    scheduled_sampling_num_passes=1, scheduled_sampling_warmup_schedule="exp",
    daisy_chain_variables=True, force_full_predict=False, no_data_parallelism=False,
    activation_dtype="float32", weight_dtype="float32", pretrained_model_dir="",
    multiproblem_schedule_threshold=0.5, multiproblem_per_task_threshold="",
    multiproblem_schedule_max_examples=1e7, multiproblem_mixing_schedule="constant",
    multiproblem_reweight_label_loss=False, multiproblem_label_weight=0.5,
    max_relative_position=0, heads_share_relative_embedding=False,
    add_relative_to_values=False, tpu_enable_host_call=False, pad_batch=False,
    multiproblem_target_eval_only=False, multiproblem_vocab_size=-1,
    multiproblem_max_input_length=-1, multiproblem_max_target_length=-1,
    multiproblem_fixed_train_length=-1, warm_start_from_second="", area_value_mode="none",
    area_key_mode="none", num_area_layers=0, max_area_width=1, max_area_height=1,
    memory_height=1, gpu_automatic_mixed_precision=False)
T2T_V1 = dict(  # transformer_base_v1's changes and additions
    norm_type="layer", hidden_size=512, batch_size=4096, max_length=256, clip_grad_norm=0.0,
    optimizer_adam_epsilon=1e-9, learning_rate_schedule="legacy",
    learning_rate_decay_scheme="noam", learning_rate=0.1, learning_rate_warmup_steps=4000,
    initializer_gain=1.0, num_hidden_layers=6, initializer="uniform_unit_scaling",
    weight_decay=0.0, optimizer_adam_beta1=0.9, optimizer_adam_beta2=0.98,
    num_sampled_classes=0, label_smoothing=0.1, shared_embedding_and_softmax_weights=True,
    symbol_modality_num_shards=16, filter_size=2048, num_encoder_layers=0,
    num_decoder_layers=0, num_heads=8, attention_key_channels=0, attention_value_channels=0,
    ffn_layer="dense_relu_dense", parameter_attention_key_channels=0,
    parameter_attention_value_channels=0, attention_dropout=0.0,
    attention_dropout_broadcast_dims="", relu_dropout=0.0, relu_dropout_broadcast_dims="",
    pos="timing", position_features="", nbr_decoder_problems=1, proximity_bias=False,
    causal_decoder_self_attention=True, use_pad_remover=True, self_attention_type="dot_product",
    conv_first_kernel=3, attention_variables_3d=False, use_target_space_embedding=True,
    moe_overhead_train=1.0, moe_overhead_eval=2.0, moe_num_experts=16, moe_loss_coef=1e-3,
    overload_eval_metric_name="", unidirectional_encoder=False, hard_attention_k=0,
    gumbel_noise_weight=0.0)
T2T_V2 = dict(layer_preprocess_sequence="n", layer_postprocess_sequence="da",
              layer_prepostprocess_dropout=0.1, attention_dropout=0.1, relu_dropout=0.1,
              learning_rate_warmup_steps=8000, learning_rate=0.2)
T2T_V3 = {**T2T_BASIC, **T2T_V1, **T2T_V2, "optimizer_adam_beta2": 0.997,
          "learning_rate_constant": 2.0,
          "learning_rate_schedule": "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size"}
T2T_NOT_HONOURED = {
    "learning_rate": "a scale on our schedule, not T2T's (docs/FROM_T2T.md)",
    "num_encoder_layers": "T2T's 0 = num_hidden_layers; ours is the count",
    "num_decoder_layers": "T2T's 0 = num_hidden_layers; ours is the count",
    "use_target_space_embedding": "no target-space embedding here",
}
T2T_LSTM_SEQ2SEQ = dict(T2T_BASIC, daisy_chain_variables=False, batch_size=1024,
                        hidden_size=128, num_hidden_layers=2,
                        initializer="uniform_unit_scaling", initializer_gain=1.0,
                        weight_decay=0.0)
T2T_LSTM_ATTENTION = {"attention_layer_size": 256, "output_attention": True, "num_heads": 1,
                      "attention_mechanism": "bahdanau"}
T2T_LSTM_NOT_HONOURED = {
    "learning_rate": "as above", "max_length": "T2T's 0 = batch_size; ours must be >= 1",
    "initializer": "the LSTM sets' own: uniform or keras",
    "initializer_gain": "the LSTM sets' own: the uniform's range",
    "multiply_embedding_mode": "the RNNs' embeddings are not scaled",
    "hidden_size": "embedding_size stays 1000: set both",
}


def test_every_t2t_key_is_known_and_t2t_values_mean_the_same():
    h = registry.hparams_sets["transformer_base_v3"]()
    unknown = [k for k in T2T_V3 if k not in h and k not in h.refused()]
    assert unknown == []
    with collecting_errors("T2T's transformer_base_v3"):
        for key, value in T2T_V3.items():
            if key not in T2T_NOT_HONOURED:
                setattr(h, key, value)
    assert h.check().values() == {**registry.hparams_sets["transformer_base_v3"]().values(),
                                  "learning_rate_schedule": T2T_V3["learning_rate_schedule"],
                                  "learning_rate_constant": 2.0,
                                  "learning_rate_decay_scheme": "noam",
                                  "learning_rate_decay_steps": 5000}
    lstm = lstm_sutskever()
    assert [k for k in T2T_LSTM_SEQ2SEQ if k not in lstm and k not in lstm.refused()] == []
    with collecting_errors("T2T's lstm_seq2seq"):
        for key, value in T2T_LSTM_SEQ2SEQ.items():
            if key not in T2T_LSTM_NOT_HONOURED:
                setattr(lstm, key, value)
    assert (lstm.check().num_encoder_layers, lstm.dropout, lstm.batch_size) == (2, 0.2, 1024)
    attention = lstm_luong_multi30k()
    with collecting_errors("T2T's lstm_attention_base"):
        for key, value in T2T_LSTM_ATTENTION.items():
            if key not in T2T_LSTM_NOT_HONOURED:
                attention.add_hparam(key, value)


def test_the_tables_classify_each_key_once():
    tables = [set(ALIASES), set(NO_EFFECT), set(ONLY_AT)]
    assert sum(map(len, tables)) == len(set().union(*tables))
