"""A training loop with a learning-rate schedule, logging and data augmentation.
Contains purity bugs on purpose."""

import logging
import time

import jax
import jax.numpy as jnp
import numpy as np

logger = logging.getLogger(__name__)

learning_rate = 1e-2
loss_history = []


def decay_learning_rate(factor):
    global learning_rate
    learning_rate = learning_rate * factor


@jax.jit
def sgd_step(params, grads):
    # JAX101: learning_rate is baked in at the first trace; decay_learning_rate() has no effect.
    return jax.tree_util.tree_map(lambda p, g: p - learning_rate * g, params, grads)


@jax.jit
def augment(images):
    # JAX104: drawn once while tracing; every batch gets the same "random" noise.
    noise = np.random.normal(scale=0.1, size=images.shape)
    # JAX103: runs once, while tracing.
    print("augmenting batch of", images.shape[0])
    return images + noise


@jax.jit
def loss_fn(params, images, labels):
    logits = images @ params["w"]
    loss = jnp.mean((logits - labels) ** 2)
    # JAX102: appends a tracer to a module-level list (UnexpectedTracerError later).
    loss_history.append(loss)
    return loss


def fit(params, batches, epochs):
    start = time.time()
    for epoch in range(epochs):
        for images, labels in batches:
            # JAX501: a new lambda every iteration, so jax.jit recompiles every step.
            grad_fn = jax.jit(jax.grad(lambda p: loss_fn(p, augment(images), labels)))
            params = sgd_step(params, grad_fn(params))
        decay_learning_rate(0.9)
        logger.info("epoch %d done after %.1fs", epoch, time.time() - start)
    return params
