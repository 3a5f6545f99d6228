"""GANOptimizer: a G:D learning-rate ratio that holds under Adam, where lam does not."""

import warnings

import numpy as np
import pytest

import keras

import onestep_gan
from tests.test_one_step_gan import batch, make_conditional_discriminator, make_generator


def one_adam_step(ratio=1.0, lam=1.0, steps=1):
    keras.utils.set_random_seed(0)
    gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), lam=lam)
    conditions, real = batch()
    gan(conditions)
    start = {id(v): v.numpy().copy() for v in gan.trainable_variables}
    gan.compile(
        optimizer=onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-2), generator_learning_rate_ratio=ratio)
    )
    for _ in range(steps):
        gan.train_on_batch(conditions, real)

    def displacement(model):
        return np.concatenate([(v.numpy() - start[id(v)]).ravel() for v in model.trainable_variables])

    return displacement(gan.generator), displacement(gan.discriminator)


def test_generator_update_scales_with_the_ratio_under_adam():
    g_full, d_full = one_adam_step(ratio=1.0)
    g_quarter, d_quarter = one_adam_step(ratio=0.25)
    # Adam's first step is lr * g / (|g| + eps): it scales with the learning rate only.
    np.testing.assert_allclose(g_quarter, 0.25 * g_full, rtol=1e-4, atol=1e-7)
    np.testing.assert_array_equal(d_quarter, d_full)
    assert np.linalg.norm(g_full) > 0


def test_lam_barely_moves_generator_under_adam():
    # Why the ratio exists: under Adam, lam cancels out of the step.
    g_lam1, _ = one_adam_step(lam=1.0, steps=5)
    g_lam01, _ = one_adam_step(lam=0.1, steps=5)
    ratio = np.linalg.norm(g_lam01) / np.linalg.norm(g_lam1)
    assert ratio == pytest.approx(1.0, abs=0.02)


def test_explicit_generator_optimizer_and_learning_rate_setter():
    optimizer = onestep_gan.GANOptimizer(
        keras.optimizers.Adam(1e-3), generator_optimizer=keras.optimizers.SGD(0.5)
    )
    assert isinstance(optimizer.generator_optimizer, keras.optimizers.SGD)
    ratio_optimizer = onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-3), generator_learning_rate_ratio=4.0)
    assert float(ratio_optimizer.generator_optimizer.learning_rate) == pytest.approx(4e-3)
    ratio_optimizer.learning_rate = 2e-3
    assert float(ratio_optimizer.discriminator_optimizer.learning_rate) == pytest.approx(2e-3)
    assert float(ratio_optimizer.generator_optimizer.learning_rate) == pytest.approx(8e-3)


def test_optimizer_config_round_trip():
    optimizer = onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-3, beta_1=0.5), generator_learning_rate_ratio=0.25)
    clone = onestep_gan.GANOptimizer.from_config(optimizer.get_config())
    assert clone.generator_learning_rate_ratio == 0.25
    assert float(clone.generator_optimizer.learning_rate) == pytest.approx(2.5e-4)
    assert clone.discriminator_optimizer.get_config()["beta_1"] == 0.5


@pytest.mark.parametrize("ratio", [0.0, -1.0])
def test_bad_ratio_raises(ratio):
    with pytest.raises(ValueError, match=f"Expected generator_learning_rate_ratio to be a finite number > 0. Received: generator_learning_rate_ratio={ratio}"):
        onestep_gan.GANOptimizer("adam", generator_learning_rate_ratio=ratio)


def test_apply_without_generator_variables_raises():
    optimizer = onestep_gan.GANOptimizer("sgd")
    variable = keras.Variable(np.ones(2, "float32"))
    with pytest.raises(ValueError, match="does not know which variables belong to the generator"):
        optimizer.apply([np.ones(2, "float32")], [variable])


# --------------------------------------------------------------- Keras optimizer contract
def gan_with(optimizer, **kwargs):
    gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), **kwargs)
    conditions, real = batch()
    gan(conditions)
    gan.compile(optimizer=optimizer)
    return gan, conditions, real


def test_learning_rate_callback_keeps_an_explicit_generator_optimizers_ratio():
    optimizer = onestep_gan.GANOptimizer(
        keras.optimizers.SGD(0.1), generator_optimizer=keras.optimizers.SGD(0.01)
    )
    gan, conditions, real = gan_with(optimizer)
    halve = keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr / 2 if epoch else lr)
    gan.fit(conditions, real, batch_size=8, epochs=3, verbose=0, callbacks=[halve])
    assert float(optimizer.discriminator_optimizer.learning_rate) == pytest.approx(0.025)
    assert float(optimizer.generator_optimizer.learning_rate) == pytest.approx(0.0025)


def rates(optimizer):
    return (float(optimizer.discriminator_optimizer.learning_rate), float(optimizer.generator_optimizer.learning_rate))


@pytest.mark.parametrize("trainer", ["one_step", "alternating"])
def test_an_absolute_schedule_and_a_floor_keep_the_ratio(trainer):
    """Keras' learning-rate callbacks set each inner optimizer (`optimizers`, which `SwapEMAWeights` reads) on its
    own: a schedule that ignores the current rate gave G D's rate, and ReduceLROnPlateau's `min_lr` floored each net
    apart (G/D 1 and 0.8 for a ratio of 0.25). G's rate follows D's at the ratio from the next step on."""
    conditions, real = batch()

    def trained(callback, epochs):
        if trainer == "one_step":
            gan, _, _ = gan_with(onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-3), generator_learning_rate_ratio=0.25))
        else:
            gan = onestep_gan.AlternatingGAN(make_generator(), make_conditional_discriminator())
            gan(conditions)
            gan.compile(discriminator_optimizer=keras.optimizers.Adam(1e-3), generator_optimizer=keras.optimizers.Adam(2.5e-4))
        history = gan.fit(conditions, real, batch_size=8, epochs=epochs, verbose=0, callbacks=[callback])
        return gan, history.history

    gan, _ = trained(keras.callbacks.LearningRateScheduler(lambda epoch: 1e-3 * 0.5 ** epoch), epochs=2)
    optimizer = getattr(gan, "gan_optimizer", gan.optimizer)  # AlternatingGAN's GANOptimizer holds both
    assert rates(optimizer) == pytest.approx((5e-4, 1.25e-4), rel=1e-6)
    # No improvement after the first epoch: each later one halves D's rate, down to min_lr (1e-3, 5e-4, 2.5e-4, 2e-4).
    plateau = keras.callbacks.ReduceLROnPlateau(monitor="d_loss", mode="min", factor=0.5, patience=0, min_delta=1e9,
                                               min_lr=2e-4)
    gan, history = trained(plateau, epochs=4)
    optimizer = getattr(gan, "gan_optimizer", gan.optimizer)
    # The rates each epoch trained with (each inner optimizer's, logged after the epoch's steps).
    logged = sorted((key, value) for key, value in history.items() if key.startswith("learning_rate"))
    if trainer == "one_step":  # named after each net's copy of the one optimizer compiled (README)
        name = optimizer.discriminator_optimizer.name
        assert name.startswith("adam") and optimizer.generator_optimizer.name == f"{name}_generator"
        assert [key for key, _ in logged] == [f"learning_rate_{name}", f"learning_rate_{name}_generator"]
    (_, discriminator_log), (_, generator_log) = sorted(logged, key=lambda pair: "generator" in pair[0])
    np.testing.assert_allclose(discriminator_log, [1e-3, 1e-3, 5e-4, 2.5e-4], rtol=1e-6)
    np.testing.assert_allclose(generator_log, 0.25 * np.array(discriminator_log), rtol=1e-6)
    gan.train_on_batch(conditions, real)  # the last epoch's reduction, from the next step on
    assert rates(optimizer) == pytest.approx((2e-4, 5e-5), rel=1e-6)


def test_generator_optimizer_and_ratio_together_are_refused():
    with pytest.raises(ValueError, match="either generator_optimizer or generator_learning_rate_ratio"):
        onestep_gan.GANOptimizer("sgd", generator_optimizer="sgd", generator_learning_rate_ratio=0.5)


def weights_after_one_step(make_optimizer, trainer="one_step"):
    keras.utils.set_random_seed(0)
    conditions, real = batch()
    if trainer == "one_step":
        gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), lam=0.5)
        gan(conditions)
        gan.compile(optimizer=make_optimizer())
    else:
        gan = onestep_gan.AlternatingGAN(make_generator(), make_conditional_discriminator())
        gan(conditions)
        gan.compile(discriminator_optimizer=make_optimizer(), generator_optimizer=make_optimizer())
    gan.fit(conditions, real, batch_size=8, epochs=1, shuffle=False, verbose=0)
    return [v.numpy() for v in gan.trainable_variables]


@pytest.mark.parametrize(
    "trainer, wrap",
    [("one_step", False), ("one_step", True), ("alternating", False)],
)
def test_loss_scale_factor_is_undone(trainer, wrap):
    def scaled():
        sgd = keras.optimizers.SGD(0.1, loss_scale_factor=128.0)
        return onestep_gan.GANOptimizer(sgd) if wrap else sgd

    expected = weights_after_one_step(lambda: keras.optimizers.SGD(0.1), trainer)
    for value, reference in zip(weights_after_one_step(scaled, trainer), expected):
        np.testing.assert_allclose(value, reference, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("where", ["inner", "outer"])
def test_adamw_weight_decay_exclusions_reach_both_nets(where):
    adamw = keras.optimizers.AdamW(0.1, weight_decay=0.5)
    if where == "inner":
        adamw.exclude_from_weight_decay(var_names=["bias"])
    optimizer = onestep_gan.GANOptimizer(adamw, generator_learning_rate_ratio=0.5)
    if where == "outer":
        optimizer.exclude_from_weight_decay(var_names=["bias"])
    gan, _, _ = gan_with(optimizer)
    for variable in gan.trainable_variables:
        variable.assign(np.ones(variable.shape, "float32"))
    # Zero gradients: Adam's step is 0, only the decoupled weight decay moves the weights.
    optimizer.apply([np.zeros(v.shape, "float32") for v in gan.trainable_variables], gan.trainable_variables)
    for variable in gan.trainable_variables:
        decayed = "bias" not in variable.path
        rate = 0.1 * (0.5 if any(variable is g for g in gan.generator.trainable_variables) else 1.0)
        expected = 1.0 - rate * 0.5 if decayed else 1.0
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-6, err_msg=variable.path)


class HalvingSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """A user's schedule, neither serialisable nor registered (Keras trains with it)."""

    def __call__(self, step):
        return 0.1 * keras.ops.power(0.5, keras.ops.cast(step, "float32"))


LEARNING_RATES = {  # each 0.025 after 2 steps
    "keras schedule": lambda: keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5),
    "unserialisable schedule": HalvingSchedule,
    "callable": lambda: (lambda: 0.025),
}


@pytest.mark.parametrize("ratio", [None, 0.5])
@pytest.mark.parametrize("kind", list(LEARNING_RATES))
def test_learning_rate_schedule_is_accepted(kind, ratio):
    """Any learning rate Keras trains with; serialising it is needed only to save (a Keras schedule)."""
    rate = LEARNING_RATES[kind]()
    kwargs = {} if ratio is None else {"generator_learning_rate_ratio": ratio}
    optimizer = onestep_gan.GANOptimizer(keras.optimizers.SGD(rate), **kwargs)
    gan, conditions, real = gan_with(optimizer)
    gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)  # 2 steps
    d_rate = float(optimizer.discriminator_optimizer.learning_rate)
    assert d_rate == pytest.approx(0.025)
    assert float(optimizer.generator_optimizer.learning_rate) == pytest.approx(d_rate * (ratio or 1.0))
    if kind == "keras schedule":
        clone = onestep_gan.GANOptimizer.from_config(optimizer.get_config())
        assert float(clone.generator_optimizer.learning_rate) == pytest.approx(0.1 * (ratio or 1.0))
    explicit = onestep_gan.GANOptimizer(keras.optimizers.SGD(rate), generator_optimizer=keras.optimizers.SGD(rate))
    assert explicit.generator_learning_rate_ratio is None  # no fixed ratio to keep


def clip_setup(optimizer):
    """Two variables, one per net: G's gradient has norm 5, D's 12, together 13."""
    g_var, d_var = keras.Variable(np.zeros(2, "float32")), keras.Variable(np.zeros(2, "float32"))
    optimizer.assign_generator_variables([g_var])
    optimizer.apply([np.array([3.0, 4.0], "float32"), np.array([0.0, 12.0], "float32")], [g_var, d_var])
    return -g_var.numpy(), -d_var.numpy()


@pytest.mark.parametrize(
    "make",
    [
        lambda: onestep_gan.GANOptimizer(keras.optimizers.SGD(1.0, global_clipnorm=1.3)),
        lambda: onestep_gan.GANOptimizer(keras.optimizers.SGD(1.0), global_clipnorm=1.3),
    ],
    ids=["inner", "argument"],
)
def test_global_clipnorm_is_one_norm_over_both_nets(make):
    g_step, d_step = clip_setup(make())
    np.testing.assert_allclose(g_step, [0.3, 0.4], rtol=1e-5)  # both scaled by 1.3 / 13
    np.testing.assert_allclose(d_step, [0.0, 1.2], rtol=1e-5)


def test_global_clipnorm_per_net_with_explicit_optimizers():
    optimizer = onestep_gan.GANOptimizer(
        keras.optimizers.SGD(1.0, global_clipnorm=1.3),
        generator_optimizer=keras.optimizers.SGD(1.0, global_clipnorm=1.3),
    )
    g_step, d_step = clip_setup(optimizer)
    np.testing.assert_allclose(g_step, [1.3 * 0.6, 1.3 * 0.8], rtol=1e-5)
    np.testing.assert_allclose(d_step, [0.0, 1.3], rtol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: onestep_gan.GANOptimizer(keras.optimizers.SGD(1.0, global_clipnorm=1.0, gradient_accumulation_steps=2)),
        lambda: onestep_gan.GANOptimizer(keras.optimizers.SGD(1.0, gradient_accumulation_steps=2), global_clipnorm=1.0),
    ],
    ids=["inner", "argument"],
)
def test_joint_global_clipnorm_with_gradient_accumulation_is_refused(make):
    """The joint norm is taken before the inner optimizers accumulate, so it would clip each
    batch's gradient (10 then 0: a step of 0.5) where Keras clips the accumulated one (a step of 1)."""
    with pytest.raises(ValueError, match="global_clipnorm.*gradient_accumulation_steps=2"):
        make()


def test_global_clipnorm_per_net_with_gradient_accumulation_is_keras_own():
    def sgd():
        return keras.optimizers.SGD(1.0, global_clipnorm=1.0, gradient_accumulation_steps=2)

    optimizer = onestep_gan.GANOptimizer(sgd(), generator_optimizer=sgd())
    g_var, d_var = keras.Variable(np.zeros(1, "float32")), keras.Variable(np.zeros(1, "float32"))
    optimizer.assign_generator_variables([g_var])
    keras_optimizer, reference = sgd(), keras.Variable(np.zeros(1, "float32"))
    for gradient in (10.0, 0.0):
        optimizer.apply([np.array([gradient], "float32"), np.array([gradient], "float32")], [g_var, d_var])
        keras_optimizer.apply([keras.ops.convert_to_tensor(np.array([gradient], "float32"))], [reference])
    np.testing.assert_allclose(reference.numpy(), [-1.0], rtol=1e-6)  # Keras: the mean 5, clipped to 1
    np.testing.assert_allclose(g_var.numpy(), reference.numpy(), rtol=1e-6)
    np.testing.assert_allclose(d_var.numpy(), reference.numpy(), rtol=1e-6)


def test_swap_ema_weights_callback():
    optimizer = onestep_gan.GANOptimizer(keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5))
    gan, conditions, real = gan_with(optimizer)
    gan.fit(conditions, real, batch_size=4, epochs=2, verbose=0,
            validation_data=(conditions, real), callbacks=[keras.callbacks.SwapEMAWeights()])
    assert len(optimizer.optimizers) == 2 and all(o.use_ema for o in optimizer.optimizers)


def test_ema_weights_are_the_nets_weights_after_fit():
    """With `use_ema`, `fit` ends by writing each net's moving average into its weights
    (`finalize_variable_values`), as Keras does for one optimizer."""
    optimizer = onestep_gan.GANOptimizer(keras.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5))
    gan, conditions, real = gan_with(optimizer)
    gan.fit(conditions, real, batch_size=4, epochs=2, verbose=0)
    checked = 0
    for inner in optimizer.optimizers:
        for variable, average in zip(inner._trainable_variables, inner._model_variables_moving_average):
            np.testing.assert_allclose(variable.numpy(), average.numpy(), rtol=1e-6)
            checked += 1
    assert checked == len(gan.trainable_variables)
    # The averages lag the last step's weights: without the write-back the weights would differ.
    assert int(optimizer.iterations) > 1


@pytest.mark.parametrize("frozen", ["discriminator", "generator", None])
def test_iterations_count_the_steps_whichever_net_is_frozen(frozen):
    """`optimizer.iterations` (read by TensorBoard, schedules, callbacks) counts the training steps,
    also when D is frozen and D's inner optimizer never steps."""
    gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator())
    conditions, real = batch()
    gan(conditions)
    if frozen:
        getattr(gan, frozen).trainable = False
    gan.compile(optimizer=onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the frozen net's warning
        for _ in range(3):
            gan.train_on_batch(conditions, real)
    assert int(keras.ops.convert_to_numpy(gan.optimizer.iterations)) == 3


def test_wrapping_one_optimizer_again_keeps_its_global_clipnorm_and_loss_scale_factor():
    """`compile` again with the same optimizer object (the frozen-part warning asks for it) clips and
    scales as the first compile did: the settings the first GANOptimizer took over are not lost."""
    for factor, g_expected, d_expected in ((8.0, [0.3, 0.4], [0.0, 1.2]), (20.0, [0.15, 0.2], [0.0, 0.6])):
        inner = keras.optimizers.SGD(1.0, global_clipnorm=1.3, loss_scale_factor=factor)
        first = onestep_gan.GANOptimizer(inner)
        second = onestep_gan.GANOptimizer(inner)
        assert (second.global_clipnorm, second.loss_scale_factor) == (first.global_clipnorm, first.loss_scale_factor)
        assert (second.global_clipnorm, second.loss_scale_factor) == (1.3, factor)
        # Unscaled (norm 13 / factor), then clipped jointly to 1.3 if above it.
        g_step, d_step = clip_setup(second)
        np.testing.assert_allclose(g_step, g_expected, rtol=1e-5)
        np.testing.assert_allclose(d_step, d_expected, rtol=1e-5)


def test_a_variable_overwritten_with_its_gradient_is_neither_unscaled_nor_clipped():
    """float8 layers' scales and amax history are `overwrite_with_gradient` variables: their
    "gradient" is their new value, which Keras' own apply leaves out of the loss-scale undoing
    and of the global norm."""
    optimizer = onestep_gan.GANOptimizer(keras.optimizers.SGD(1.0), global_clipnorm=1.3, loss_scale_factor=8.0)
    g_var, d_var = keras.Variable(np.zeros(2, "float32")), keras.Variable(np.zeros(2, "float32"))
    scale = keras.Variable(np.ones(1, "float32"))
    scale.overwrite_with_gradient = True
    optimizer.assign_generator_variables([g_var])
    optimizer.apply(
        [np.array([3.0, 4.0], "float32"), np.array([0.0, 12.0], "float32"), np.array([40.0], "float32")],
        [g_var, d_var, scale],
    )
    np.testing.assert_array_equal(scale.numpy(), [40.0])
    np.testing.assert_allclose(-g_var.numpy(), [0.3, 0.4], rtol=1e-5)  # the norm of the other two: 13 / 8
    np.testing.assert_allclose(-d_var.numpy(), [0.0, 1.2], rtol=1e-5)
