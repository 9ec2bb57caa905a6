"""MNIST softmax regression, after the 2017 Azure ML Workbench TensorFlow sample.

Logs through the Workbench API (azureml.logging), which mlw provides. Uses TensorFlow when it
is installed (MNIST from ./data/mnist.npz when present, synthetic digits otherwise); without
TensorFlow it trains the same model in pure Python, so the template runs anywhere.

Run it with:  mlw experiment submit -c local train.py --epochs 2
"""

import argparse
import os
import sys

from azureml.logging import get_azureml_logger

logger = get_azureml_logger()


def parse_args():
    parser = argparse.ArgumentParser(description="MNIST with TensorFlow")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--data", default="data")
    return parser.parse_args()


def on_epoch(epoch, loss, accuracy):
    print(f"epoch {epoch}: loss {loss:.4f} accuracy {accuracy:.4f}", flush=True)
    logger.log("Loss", loss)
    logger.log("Accuracy", accuracy)


def with_tensorflow(tf, args):
    path = os.path.join(args.data, "mnist.npz")
    if os.path.exists(path):
        (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data(path=os.path.abspath(path))
        x_train, x_test = x_train.reshape(-1, 784) / 255.0, x_test.reshape(-1, 784) / 255.0
        print(f"data: MNIST from {path}")
    else:
        from mlw.synthetic import make_digits

        data = make_digits(1200, seed=2)
        x = tf.constant([image for image, _ in data])
        y = tf.constant([label for _, label in data])
        x_train, y_train, x_test, y_test = x[:1000], y[:1000], x[1000:], y[1000:]
        print("data: synthetic digits (put mnist.npz in ./data to use MNIST)")
    model = tf.keras.Sequential([tf.keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    for epoch in range(1, args.epochs + 1):
        history = model.fit(x_train, y_train, epochs=1, verbose=0)
        _, accuracy = model.evaluate(x_test, y_test, verbose=0)
        on_epoch(epoch, history.history["loss"][-1], accuracy)
    return accuracy


def main():
    args = parse_args()
    try:
        import tensorflow as tf
    except ImportError:
        from mlw.synthetic import make_digits, train_softmax

        print("TensorFlow is not installed: training the same softmax model in pure Python")
        data = make_digits(600, seed=2)
        accuracy = train_softmax(data[:500], data[500:], args.epochs, on_epoch=on_epoch)
    else:
        print(f"TensorFlow {tf.__version__}")
        accuracy = with_tensorflow(tf, args)
    logger.log("Final accuracy", accuracy).wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
