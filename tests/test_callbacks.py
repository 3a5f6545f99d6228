import math
import warnings

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


def test_checkpoints_and_backups_keep_the_last_good_epoch(tmp_path):
    """The loss turns NaN in epoch 3: the error comes at that batch, before Keras ends the epoch, so
    `ModelCheckpoint` does not save the diverged weights over epoch 2's and `BackupAndRestore` keeps
    its backup (put anywhere in the list)."""
    x, y = data()
    y_bad = y.copy()
    y_bad[40] = np.nan  # 4 batches of 8 an epoch: epochs 1 and 2 are fine, epoch 3's 2nd batch is not
    dataset = [(x[:32], y[:32]), (x, y_bad)]
    model = regression_model(learning_rate=1e-4)
    checkpoint = tmp_path / "ck.weights.h5"
    callbacks = [
        keras.callbacks.ModelCheckpoint(str(checkpoint), save_weights_only=True),
        keras.callbacks.BackupAndRestore(str(tmp_path / "backup")),
        TerminateOnDivergence(),
    ]

    def batches():
        for features, targets in dataset:
            for start in range(0, len(features), 8):
                yield features[start:start + 8], targets[start:start + 8]

    import tensorflow as tf

    data_stream = tf.data.Dataset.from_generator(
        batches, output_signature=(tf.TensorSpec((None, 1), "float32"), tf.TensorSpec((None, 1), "float32")))
    with pytest.raises(TrainingDivergedError, match=r"loss=nan at epoch 3, batch 2\."):
        model.fit(data_stream.repeat(), steps_per_epoch=4, epochs=3, shuffle=False, verbose=0, callbacks=callbacks)
    saved = regression_model(learning_rate=1e-4)
    saved.load_weights(str(checkpoint))
    assert all(np.all(np.isfinite(weight)) for weight in saved.get_weights())
    assert (tmp_path / "backup").is_dir()


def test_a_validation_key_is_watched_at_epoch_end():
    x, y = data()
    model = regression_model(learning_rate=1e-4)
    callback = TerminateOnDivergence(monitor="val_loss")
    with pytest.raises(TrainingDivergedError, match=r"val_loss=nan at epoch 1\. Training was stopped"):
        model.fit(x, y, validation_data=(x, np.full_like(y, np.nan)), batch_size=8, epochs=3, verbose=0,
                  callbacks=[callback])
    value = callback.diverged.pop("value")
    assert callback.diverged == {"epoch": 0, "batch": None, "monitor": "val_loss"} and math.isnan(value)


def test_a_key_that_is_never_logged_is_named_in_a_warning():
    model = regression_model(learning_rate=1e-4)
    with pytest.warns(UserWarning, match=r"monitor='d_los' is not in the logs \(available: .*loss"):
        model.fit(*data(), batch_size=8, epochs=2, verbose=0, callbacks=[TerminateOnDivergence(monitor="d_los")])


def test_a_validation_key_is_not_missed_on_epochs_without_validation():
    """With `validation_freq=2` the first epoch's logs hold no `val_` key: no warning then, and the
    key is watched when it comes; a `val_` key absent when validation ran, or never, is named."""
    x, y = data()
    model = regression_model(learning_rate=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TrainingDivergedError, match=r"val_loss=.* \(limit 1e-09\) at epoch 2\."):
            model.fit(x, y, validation_data=(x, y), validation_freq=2, batch_size=8, epochs=4, verbose=0,
                      callbacks=[TerminateOnDivergence(monitor="val_loss", max_loss=1e-9)])
    with pytest.warns(UserWarning, match=r"monitor='val_los' is not in the logs \(available: .*val_loss"):
        model.fit(x, y, validation_data=(x, y), validation_freq=2, batch_size=8, epochs=2, verbose=0,
                  callbacks=[TerminateOnDivergence(monitor="val_los")])
    with pytest.warns(UserWarning, match=r"monitor='val_loss' is not in the logs \(available: loss\)"):
        model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[TerminateOnDivergence(monitor="val_loss")])
