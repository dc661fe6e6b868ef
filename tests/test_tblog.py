"""TensorBoard records: a heatmap reaches the event file as exactly the pixels drawn."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from seq2seq.training.tblog import RunLogger
from seq2seq.viz.figures import figure_to_image_array
from seq2seq.viz.heatmap import plot_attention


def test_a_heatmap_reaches_tensorboard_as_the_pixels_drawn(tmp_path: Path) -> None:
    weights = np.random.default_rng(0).dirichlet(np.ones(4), size=(2, 3))  # (heads, T_t, T_s)
    figure = plot_attention(weights, ["我", "爱", "中国", "<eos>"], ["I", "love", "China"])
    drawn = figure_to_image_array(figure)
    logger = RunLogger(tmp_path, purge_step=5)
    try:
        logger.figure("attention/sample_0", figure, 7)
    finally:
        logger.close()
    events = EventAccumulator(str(tmp_path), size_guidance={"images": 0})
    events.Reload()
    (image,) = events.Images("attention/sample_0")
    assert image.step == 7 and (image.height, image.width) == drawn.shape[:2]
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    np.testing.assert_array_equal(pixels, drawn)
