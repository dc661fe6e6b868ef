"""Process plumbing of ``scripts/train.py``: the command entry (:mod:`.entry`: the one place
that turns errors into one line and keeps worker ranks quiet), Hydra's hooks before it makes a
folder (:mod:`.callbacks`) and a sweep's plan (:mod:`.sweep`), the command itself
(:mod:`.command`: claim the run folder, train here or launch), how many processes and how they
are started (:mod:`.processes`), the run folder's lock and record (:mod:`.run_folder`) and how
ranks above 0 behave at the command line (:mod:`.workers`).

Imports flow one way: this package uses :mod:`seq2seq.training`, never the reverse.
"""
