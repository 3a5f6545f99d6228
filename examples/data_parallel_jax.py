"""Multi-process data-parallel `OneStepGAN.fit` on JAX (`keras.distribution.DataParallel`).

    python examples/data_parallel_jax.py --processes 2 --out /tmp/dp2
    python examples/data_parallel_jax.py --processes 1 --out /tmp/dp1

launches the given number of processes on this machine (one CPU device each, JAX's gloo CPU
collectives over localhost), trains an unconditional toy GAN for a few steps on a fixed global
batch (each process feeds its own slice of it), and each process writes `OUT.processN.npz`: the
final weights (the same in every process) and its slice of the training noise of one step. On several hosts or GPUs the worker
code is the same; only `keras.distribution.initialize` gets the real coordinator address, the
number of processes and this process's id (or reads them from the cluster's environment).
"""

import argparse
import os
import socket
import subprocess
import sys

from onestep_gan.rdf2text.cli import run_script

GLOBAL_BATCH, LATENT_DIM, STEPS = 16, 4, 3


def worker(process_id, processes, port, out):
    os.environ["KERAS_BACKEND"] = "jax"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    if processes > 1:
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    import keras
    import numpy as np

    import onestep_gan

    if processes > 1:
        keras.distribution.initialize(f"localhost:{port}", processes, process_id)
    devices = keras.distribution.list_devices("cpu")
    distribution = keras.distribution.DataParallel(devices=devices)
    distribution.auto_shard_dataset = False  # each process feeds its own slice (below)
    keras.distribution.set_distribution(distribution)

    keras.utils.set_random_seed(0)
    generator = keras.Sequential(
        [keras.Input((LATENT_DIM,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(2)]
    )
    discriminator = keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(1)]
    )
    gan = onestep_gan.OneStepGAN(generator, discriminator, latent_dim=LATENT_DIM, seed=5)
    gan.compile(optimizer=keras.optimizers.Adam(1e-2))

    start = {f"start{i}": np.asarray(v.numpy()) for i, v in enumerate(gan.trainable_variables)}
    real = np.random.default_rng(0).normal(size=(STEPS * GLOBAL_BATCH, 2)).astype("float32")
    local = GLOBAL_BATCH // processes
    # Step k's global batch is rows [k*G, (k+1)*G); this process feeds its slice of each.
    mine = np.concatenate(
        [real[k * GLOBAL_BATCH + process_id * local:][:local] for k in range(STEPS)]
    )
    gan.fit(mine, batch_size=local, epochs=1, shuffle=False, verbose=0)

    # The training noise of one more step, as the step draws it (one global array, sharded).
    stream = onestep_gan.ReplicaSeedGenerator(5)
    layout = keras.distribution.distribution().get_data_layout((GLOBAL_BATCH, LATENT_DIM))
    draw = jax.jit(
        lambda: keras.random.normal((GLOBAL_BATCH, LATENT_DIM), seed=stream),
        out_shardings=layout.backend_layout,
    )
    noise = draw()
    local_noise = np.concatenate([np.asarray(shard.data) for shard in noise.addressable_shards])

    weights = {f"w{i}": np.asarray(v.numpy()) for i, v in enumerate(gan.trainable_variables)}
    np.savez(f"{out}.process{process_id}.npz", noise=local_noise, **weights, **start)


def free_port():
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        return sock.getsockname()[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--out", required=True, help="output prefix; writes OUT.processN.npz")
    parser.add_argument("--process-id", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.process_id is not None:
        worker(args.process_id, args.processes, args.port, args.out)
        return
    port = free_port()
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    launched = [
        subprocess.Popen(
            [sys.executable, __file__, "--processes", str(args.processes), "--out", args.out,
             "--process-id", str(i), "--port", str(port)],
            env=env,
        )
        for i in range(args.processes)
    ]
    codes = [process.wait(timeout=600) for process in launched]
    if any(codes):
        raise SystemExit(f"worker exit codes: {codes}")


if __name__ == "__main__":
    sys.exit(run_script(main))
