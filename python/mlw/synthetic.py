"""A tiny pure-Python stand-in for MNIST training, used by the example projects when their
framework (PyTorch, TensorFlow) is not installed, so that every template runs anywhere."""

import math
import random


def make_digits(count, seed=0, size=8):
    """`count` noisy 8x8 images of ten distinct prototype patterns, with labels 0-9."""
    rng = random.Random(seed)
    prototypes = [[1.0 if rng.random() < 0.35 else 0.0 for _ in range(size * size)] for _ in range(10)]
    data = []
    for _ in range(count):
        label = rng.randrange(10)
        image = [min(1.0, max(0.0, p + rng.gauss(0, 0.25))) for p in prototypes[label]]
        data.append((image, label))
    return data


def train_softmax(train, test, epochs, learning_rate=0.5, on_epoch=None):
    """Trains softmax regression with SGD; calls on_epoch(epoch, loss, accuracy) each epoch."""
    features = len(train[0][0])
    weights = [[0.0] * features for _ in range(10)]
    bias = [0.0] * 10
    accuracy = 0.0
    for epoch in range(1, epochs + 1):
        total_loss = 0.0
        for image, label in train:
            scores = [sum(w * x for w, x in zip(row, image)) + b for row, b in zip(weights, bias)]
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            norm = sum(exps)
            probs = [e / norm for e in exps]
            total_loss -= math.log(max(probs[label], 1e-12))
            for k in range(10):
                grad = probs[k] - (1.0 if k == label else 0.0)
                if grad:
                    row = weights[k]
                    step = learning_rate * grad / 8.0
                    for i, x in enumerate(image):
                        if x:
                            row[i] -= step * x
                    bias[k] -= step
        correct = 0
        for image, label in test:
            scores = [sum(w * x for w, x in zip(row, image)) + b for row, b in zip(weights, bias)]
            correct += scores.index(max(scores)) == label
        accuracy = correct / len(test)
        if on_epoch:
            on_epoch(epoch, total_loss / len(train), accuracy)
    return accuracy
