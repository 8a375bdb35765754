"""Decoding: beam / greedy search over a model, and line / file / stdin decoding."""
from t2t_lite.decoding.beam_search import beam_search, greedy_search
from t2t_lite.decoding.decoder import decode_interactive, decode_lines
from t2t_lite.decoding.file_decoding import decode_file, decode_from_file
from t2t_lite.decoding.factory import Decoding, build_decoding
from t2t_lite.decoding.search_decoder import BeamSearchDecoder
from t2t_lite.decoding.search_options import SearchOptions
from t2t_lite.decoding.settings import DECODE_DEFAULTS, DecodeSettings, decode_hparams

__all__ = ["BeamSearchDecoder", "SearchOptions", "beam_search", "greedy_search", "DECODE_DEFAULTS",
           "DecodeSettings", "Decoding", "build_decoding", "decode_file", "decode_from_file", "decode_hparams",
           "decode_interactive", "decode_lines"]
