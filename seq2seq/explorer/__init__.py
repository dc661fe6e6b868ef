"""The attention explorer: a local page to type a sentence, see every head's attention and put
it to the test.

``scripts/serve.py RUN [RUN2]`` serves it. The rooms, in import order:

* :mod:`~seq2seq.explorer.inputs` — what a request may hold, checked (torch-free);
* :mod:`~seq2seq.explorer.explain` — one run's answer to a sentence: its translation, the
  translation under each intervention on the attention, the maps of where each word came from
  (attention, gradient × input, integrated gradients), and the gold links and each map's AER
  when the sentence is one of the run's test sentences;
* :mod:`~seq2seq.explorer.font` — the CJK font subset the page draws its labels with;
* :mod:`~seq2seq.explorer.guard` — who may use the API (Host, Origin, JSON), and the security
  headers on every answer;
* :mod:`~seq2seq.explorer.app` — the HTTP API and the page (FastAPI);
* :mod:`~seq2seq.explorer.connections` — no client can hold the server: a deadline for each
  request, a cap on connections, one line when descriptors run out;
* :mod:`~seq2seq.explorer.server` — binding a loopback port and serving until Ctrl-C.

Everything the page needs (HTML, script, style, font) comes from this package: it works
with the network off.
"""
