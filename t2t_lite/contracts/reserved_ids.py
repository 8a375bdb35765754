"""The ids every vocabulary reserves, shared by encoders, pipeline, models, search and
losses: ``PAD_ID`` pads batches and is the decoder's start symbol, ``EOS_ID`` ends
each sequence, and an encoder's own ids start at ``NUM_RESERVED_IDS``."""
PAD_ID = 0
EOS_ID = 1
NUM_RESERVED_IDS = 2
