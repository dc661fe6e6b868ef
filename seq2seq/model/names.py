"""The names configs use for the model's parts, readable without importing torch: the
attention mechanisms (keys of :data:`seq2seq.model.attention.ATTENTION_TYPES`, in this order)
and the decoder arrangements (:func:`seq2seq.model.decoder.build_decoder`)."""

ATTENTION_NAMES = ("none", "additive", "dot", "multihead")
DECODER_TYPES = ("luong", "bahdanau")
INIT_SCHEMES = ("xavier", "pytorch")  # seq2seq.model.init
