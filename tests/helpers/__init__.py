"""Helpers shared by the tests (no test module imports another): running the entry points
(:mod:`.runs`), the bad-input tables (:mod:`.bad_input`), the model factory (:mod:`.models`),
configs (:mod:`.config`) and fake ``metrics.json`` files (:mod:`.metrics`)."""
