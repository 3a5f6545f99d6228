"""The few places where training under `tf.distribute` needs care.

Keras' built-in losses divide by the number of replicas; an overridden
`compute_loss` must do it itself, otherwise loss and gradients are summed over
replicas (doubled on 2 devices). And a `SeedGenerator` is mirrored, so every
replica would draw the same noise: `ReplicaSeedGenerator` folds the replica id
into the seed. Other backends run one replica here and these are no-ops.
"""

import keras
from keras import ops


def _replica_context():
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    if not tf.distribute.has_strategy():
        return None
    return tf.distribute.get_replica_context()


def num_replicas_in_sync():
    """Number of replicas the current step is split over (1 without a strategy)."""
    if keras.backend.backend() != "tensorflow":
        return 1
    import tensorflow as tf

    return tf.distribute.get_strategy().num_replicas_in_sync


def scale_loss_for_distribution(loss):
    """Divides a per-replica mean loss so that the summed gradients are the global mean's."""
    replicas = num_replicas_in_sync()
    if replicas > 1:
        loss = loss / ops.cast(replicas, loss.dtype)
    return loss


def replica_id():
    """The id of the current replica as an int32 scalar tensor (0 without a strategy)."""
    context = _replica_context()
    if context is None:
        return ops.convert_to_tensor(0, dtype="int32")
    return ops.cast(context.replica_id_in_sync_group, "int32")


@keras.saving.register_keras_serializable(package="onestep_gan")
class ReplicaSeedGenerator(keras.random.SeedGenerator):
    """A `SeedGenerator` whose seeds differ across replicas of one step.

    On one device (and on replica 0) it draws exactly what `keras.random.SeedGenerator` draws;
    replica r's seeds are `[seed + r * REPLICA_STRIDE, counter]`. The offset goes on the seed, not
    on the counter: there, replica 0 would draw replica 1's noise after `REPLICA_STRIDE` draws.
    """

    # A large odd stride keeps one replica's seed away from the seeds users pick (0, 42, 1234).
    REPLICA_STRIDE = 1_000_003

    def next(self, ordered=True):
        seed = super().next(ordered=ordered)
        offset = ops.cast(replica_id(), seed.dtype) * self.REPLICA_STRIDE
        return seed + ops.stack([offset, ops.zeros_like(offset)])
