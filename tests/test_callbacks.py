import numpy as np
import pytest

import keras

from onestep_gan.callbacks import TerminateOnDivergence, TrainingDivergedError


def regression_model(learning_rate):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate), loss="mse")
    return model


def data():
    x = np.linspace(-10, 10, 64, dtype="float32")[:, None]
    return x, 100 * x


def test_exploding_loss_stops_training_with_a_clear_error():
    model = regression_model(learning_rate=1.0)  # diverges within a few steps
    callback = TerminateOnDivergence(max_loss=1e12)
    with pytest.raises(TrainingDivergedError, match=r"loss=.* at epoch 1, batch \d+\. Training was stopped"):
        model.fit(*data(), batch_size=8, epochs=5, verbose=0, callbacks=[callback])
    assert callback.diverged["epoch"] == 0
    assert callback.diverged["batch"] < 7  # stopped inside the first epoch


def test_healthy_training_is_untouched():
    model = regression_model(learning_rate=1e-4)
    callback = TerminateOnDivergence(max_loss=1e12)
    history = model.fit(*data(), batch_size=8, epochs=2, verbose=0, callbacks=[callback])
    assert len(history.history["loss"]) == 2 and callback.diverged is None


def test_bad_max_loss():
    with pytest.raises(ValueError, match="Received: max_loss=-1"):
        TerminateOnDivergence(max_loss=-1)
