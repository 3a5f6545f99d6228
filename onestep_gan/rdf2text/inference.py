"""Inference with a trained `TransformerGenerator`: ids in, ids out, and texts in, texts out.

- `generate`: cached (or uncached reference) greedy / beam decoding of a batch of source ids,
  the search of `decoding.py` driven by the model's `decode_step`.
- `make_generate_function`: `generate` compiled for the Keras backend (`tf.function` on
  TensorFlow, `jax.jit` on JAX; eager on PyTorch), one trace per input shape.
- `discriminator_preference`: beam score + a weight x D's score, for the reranker's ties.
- `decode_examples`: `EncodedExample`s -> texts, batched by `datasets.source_batches`.
- `generate_texts`: sets of triples -> texts, for users and the CLI.
"""

import keras
import numpy as np
from keras import ops

from onestep_gan.rdf2text import datasets, decoding, preprocessing


def _uncached_step_fn(model):
    """Step function that re-runs `model.call` on the whole prefix (quadratic cost).

    Its state is `{"source": (b, s), "prefix": (b, max_length)}`; the prefix is PAD beyond
    `step`, and causal attention keeps those positions from affecting position `step`.
    """

    def step_fn(tokens, step, state):
        prefix = decoding.write_column(state["prefix"], step, ops.cast(tokens, "int32"))
        logits = model({"source": state["source"], "target": prefix}, training=False)
        step_logits = ops.take(logits, step, axis=1)  # (batch, vocab)
        return step_logits, {"source": state["source"], "prefix": prefix}

    return step_fn


def generate(
    model,
    source_ids,
    method="greedy",
    beam_width=4,
    length_penalty=0.6,
    max_length=None,
    use_cache=True,
    return_candidates=False,
    placeholder_constraints=None,
    no_repeat_ngram_size=0,
):
    """Decodes `source_ids (batch, source_len)` with a `TransformerGenerator`.

    Args:
        model: a `TransformerGenerator` (built or not).
        source_ids: int `(batch, source_len)`.
        method: `"greedy"` or `"beam"`.
        beam_width, length_penalty: beam search settings.
        max_length: tokens to generate; defaults to `model.max_target_length`.
        use_cache: decode with `model.decode_step` and a key/value cache (linear cost per
            token); False re-runs the full model on the prefix each step (reference path).
        return_candidates: beam only: return every final beam, best first, with its
            length-normalised score (`(batch, beam, max_length)`, `(batch, beam)`), for reranking.
        placeholder_constraints: None, or `(placeholder_ids, required_ids)` for
            `decoding.PlaceholderConstraints`: no placeholder written more often than the
            source holds it, EOS only after every required one the source holds
            (`placeholder_constraints_for(preprocessor)` gives the WebNLG choice).
        no_repeat_ngram_size: 0 (off) or n: no text writes an n-gram of its own twice
            (`decoding.repeated_ngram_penalty`).

    Returns ids after BOS, `(batch, max_length)` int32, PAD after EOS.
    """
    if return_candidates and method != "beam":
        raise ValueError(f"`return_candidates` needs method='beam'. Received: method={method!r}")
    if method not in ("greedy", "beam"):
        raise ValueError(f"`method` must be 'greedy' or 'beam'. Received: method={method!r}")
    max_length = model.max_target_length if max_length is None else int(max_length)
    if not 1 <= max_length <= model.max_target_length:
        raise ValueError(
            f"`max_length` must be in [1, max_target_length={model.max_target_length}]. "
            f"Received: max_length={max_length}"
        )
    source_ids = ops.convert_to_tensor(source_ids, dtype="int32")
    batch_size = int(ops.shape(source_ids)[0])
    if use_cache:
        memory, source_mask = model.encode(source_ids, training=False)
        state = model.init_cache(memory, source_mask, max_length, source_ids=source_ids)

        def step_fn(tokens, step, state):
            return model.decode_step(tokens, step, state, training=False)

    else:
        prefix = ops.full((batch_size, max_length), model.pad_id, dtype="int32")
        state = {"source": source_ids, "prefix": prefix}
        step_fn = _uncached_step_fn(model)

    special_ids = {"bos_id": model.bos_id, "eos_id": model.eos_id, "pad_id": model.pad_id}
    constraints = None
    if placeholder_constraints is not None:
        placeholder_ids, required_ids = placeholder_constraints
        constraints = decoding.PlaceholderConstraints(
            source_ids, placeholder_ids, required_ids, rows_per_source=beam_width if method == "beam" else 1
        )
    if method == "greedy":
        return decoding.greedy_search(step_fn, state, batch_size, max_length, constraints=constraints,
                                      no_repeat_ngram_size=no_repeat_ngram_size, **special_ids)
    return decoding.beam_search(
        step_fn,
        decoding.tile_beams(state, beam_width),
        batch_size,
        max_length,
        beam_width=beam_width,
        length_penalty=length_penalty,
        **special_ids,
        return_all=return_candidates,
        constraints=constraints,
        no_repeat_ngram_size=no_repeat_ngram_size,
    )


def placeholder_constraints_for(preprocessor):
    """`generate`'s `placeholder_constraints` for a WebNLG `TextPreprocessor`: every placeholder
    (entities and predicates) at most as often as the source holds it; every entity placeholder
    the source holds written before EOS (a predicate's may be paraphrased)."""
    return preprocessor.copy_ids, preprocessor.placeholder_ids


def make_generate_function(
    model,
    method="beam",
    beam_width=4,
    length_penalty=0.6,
    max_length=None,
    use_cache=True,
    return_candidates=False,
    placeholder_constraints=None,
    no_repeat_ngram_size=0,
):
    """`generate` compiled for the backend: `(batch, source_len)` ids -> output ids.

    It traces once per input shape; `datasets.source_batches` keeps the shapes few. (Eager
    decoding runs the `while_loop` body op by op and is several times slower on CPU.) The
    compiled function reads the model's current weights at every call.
    """

    def generate_function(source_ids):
        return generate(
            model,
            source_ids,
            method=method,
            beam_width=beam_width,
            length_penalty=length_penalty,
            max_length=max_length,
            use_cache=use_cache,
            return_candidates=return_candidates,
            placeholder_constraints=placeholder_constraints,
            no_repeat_ngram_size=no_repeat_ngram_size,
        )

    return compile_for_backend(model, generate_function)


def compile_for_backend(model, function):
    """`function(inputs)`, which calls `model` for inference, compiled for the Keras backend.

    - TensorFlow: `tf.function` (it reads the variables when it runs).
    - JAX: `jax.jit` of a stateless version that takes the model's variable values as
      arguments, passed anew at each call: a jitted closure would bake the weights it saw at
      its first trace into the compiled function, and later calls would decode with them.
    - PyTorch: eager, without autograd bookkeeping (`torch.no_grad`).
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(function)
    if backend == "jax":
        import jax

        model._ensure_built()
        variables = list(model.variables)

        def stateless(values, inputs):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return function(inputs)

        compiled = jax.jit(stateless)
        return lambda inputs: compiled([variable.value for variable in variables], inputs)
    if backend == "torch":
        import torch

        def without_autograd(inputs):
            with torch.no_grad():
                return function(inputs)

        return without_autograd
    raise ValueError(
        f"Expected the tensorflow, jax or torch Keras backend. Received: backend={backend!r}"
    )


def discriminator_preference(discriminator, weight, real_sign):
    """`fn(source_ids, candidate_ids, beam_scores) -> (batch, beam)` numpy preferences for
    `SlotErrorReranker.choose`: beam score + `weight` x how real the `TextDiscriminator` finds
    (triples, candidate): its score times `real_sign`, the orientation of the loss it was trained
    with (`GANLoss.real_sign`: -1 for hinge, whose D scores real texts low).

    `candidate_ids (batch, beam, length)` are a beam search's candidates (PAD after EOS), given
    to D as they are, cut to the length D reads; a candidate longer than that gets -inf (D cannot
    read it), so it wins no tie against one D scores.
    """
    weight = float(weight)
    if not weight > 0:
        raise ValueError(f"`weight` must be positive. Received: weight={weight}")
    if real_sign not in (1, -1):
        raise ValueError(f"`real_sign` must be 1 or -1 (GANLoss.real_sign). Received: real_sign={real_sign}")
    text_length = discriminator.max_target_length
    pad_id = discriminator.pad_id
    score = compile_for_backend(
        discriminator, lambda inputs: discriminator(inputs, training=False)[:, 0]
    )

    def preference(source_ids, candidate_ids, beam_scores):
        candidate_ids = np.asarray(candidate_ids)
        batch_size, beam_width, length = candidate_ids.shape
        flat = candidate_ids.reshape(batch_size * beam_width, length)
        readable = (flat[:, text_length:] == pad_id).all(axis=1)
        sources = np.repeat(np.asarray(source_ids, dtype="int32"), beam_width, axis=0)
        texts = np.full((batch_size * beam_width, text_length), pad_id, dtype="int32")
        texts[:, : min(length, text_length)] = flat[:, :text_length]
        realness = real_sign * keras.ops.convert_to_numpy(score([sources, texts])).astype("float64")
        realness = np.where(readable, realness, -np.inf).reshape(batch_size, beam_width)
        return np.asarray(beam_scores, dtype="float64") + weight * realness

    return preference


def decode_examples(
    generate_function, examples, preprocessor, batch_size, progress=True, reranker=None, preference=None
):
    """Decodes `EncodedExample`s with `generate_function`; returns texts in example order.

    With a `reranking.SlotErrorReranker`, `generate_function` must return beam candidates
    (`make_generate_function(..., return_candidates=True)`), and each text is the candidate
    the reranker chooses; with a `preference` (`discriminator_preference`), ties on errors go
    to the candidate it prefers rather than to the more likely one.
    """
    if preference is not None and reranker is None:
        raise ValueError("A `preference` breaks the reranker's ties: it needs a `reranker`.")
    texts = [None] * len(examples)
    batches = list(datasets.source_batches(
        examples, batch_size, pad_id=preprocessor.pad_id, max_length=preprocessor.max_source_length
    ))
    progress_bar = keras.utils.Progbar(len(examples), unit_name="sentence") if progress else None
    for source_ids, indices in batches:
        outputs = generate_function(source_ids)
        if reranker is None:
            output_ids = keras.ops.convert_to_numpy(outputs)
            for row, index in enumerate(indices):
                example = examples[index]
                texts[index] = preprocessor.decode(output_ids[row], example.entity_map, example.predicate_map)
        else:
            candidate_ids = keras.ops.convert_to_numpy(outputs[0])  # (batch, beam, length)
            preferences = None
            if preference is not None:
                preferences = preference(source_ids, candidate_ids, keras.ops.convert_to_numpy(outputs[1]))
            for row, index in enumerate(indices):
                example = examples[index]
                # The reranker reads entity placeholders and words: predicates are put back first.
                decoded = [preprocessor.vocabulary.decode(ids) for ids in candidate_ids[row]]
                candidates = [
                    preprocessing.relexicalise_predicates(tokens, example.predicate_map) for tokens in decoded
                ]
                best = reranker.choose(
                    example.triples, candidates, example.entity_map,
                    preference=None if preferences is None else preferences[row],
                )
                texts[index] = preprocessor.relexicalise(decoded[best], example.entity_map, example.predicate_map)
        if progress_bar is not None:
            progress_bar.add(len(indices))
    return texts


def generate_texts(
    model,
    preprocessor,
    triple_sets,
    method="beam",
    beam_width=4,
    length_penalty=0.6,
    batch_size=32,
    max_length=None,
    progress=False,
    reranker=None,
    placeholder_constraints=None,
    preference=None,
    no_repeat_ngram_size=0,
):
    """Texts for sets of triples.

    Args:
        model: a trained `TransformerGenerator`.
        preprocessor: its `TextPreprocessor` (`runs.load_run` returns both); it encodes the
            triples as the model was trained, predicate placeholders included when the run's
            `config.json` has `predicate_placeholders`.
        triple_sets: list of triple sets; each triple a `webnlg.Triple` or a
            `(subject, predicate, object)` tuple, in WebNLG spelling (`Alan_Bean`).
        method, beam_width, length_penalty, max_length: see `generate`.
        batch_size: sentences decoded at once.
        reranker: a `reranking.SlotErrorReranker` (beam only): the beam candidate with the
            fewest slot errors wins.
        placeholder_constraints: see `generate` (`placeholder_constraints_for(preprocessor)`).
        preference: with a reranker, `discriminator_preference(...)`: ties on errors go to the
            candidate it prefers.
        no_repeat_ngram_size: see `generate`.

    Returns:
        One string per triple set.
    """
    examples = preprocessor.encode_triples(triple_sets)
    generate_function = make_generate_function(
        model, method=method, beam_width=beam_width, length_penalty=length_penalty, max_length=max_length,
        return_candidates=reranker is not None, placeholder_constraints=placeholder_constraints,
        no_repeat_ngram_size=no_repeat_ngram_size,
    )
    return decode_examples(
        generate_function, examples, preprocessor, batch_size, progress=progress, reranker=reranker,
        preference=preference,
    )
