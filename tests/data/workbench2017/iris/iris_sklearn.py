# An Iris-style classifier in the shape of the 2017 Workbench quickstart, written for mlw's tests:
# it logs with azureml.logging (a regularization rate, an accuracy, and a per-class precision as
# an array, the way the quickstart logged numpy arrays), prints what it did and pickles its model
# into ./outputs. It needs only the standard library; with numpy present it logs a numpy array.
import math
import os
import pickle
import random
import sys

from azureml.logging import get_azureml_logger

try:
    import numpy
except ImportError:
    numpy = None

run_logger = get_azureml_logger()
reg = float(sys.argv[1]) if len(sys.argv) > 1 else 0.01
print("Python version: {}".format(sys.version.split()[0]))
print("Regularization rate is {}".format(reg))
run_logger.log("Regularization Rate", reg)

# Three classes of flowers, four measurements each, drawn around made-up centres.
rng = random.Random(7)
centres = {"setosa": (5.0, 3.4, 1.5, 0.2), "versicolor": (5.9, 2.8, 4.3, 1.3),
           "virginica": (6.6, 3.0, 5.5, 2.0)}
rows = [(tuple(c + rng.gauss(0, 0.3) for c in centre), name)
        for name, centre in centres.items() for _ in range(50)]
rng.shuffle(rows)
train, test = rows[:105], rows[105:]
print("Iris dataset shape: ({}, 5)".format(len(rows)))

# Nearest centroid, with the centroids shrunk towards the overall mean by the regularization.
overall = [sum(x[i] for x, _ in train) / len(train) for i in range(4)]
model = {}
for name in centres:
    members = [x for x, label in train if label == name]
    mean = [sum(x[i] for x in members) / len(members) for i in range(4)]
    model[name] = [(1 - reg) * m + reg * o for m, o in zip(mean, overall)]


def predict(x):
    return min(model, key=lambda name: math.dist(x, model[name]))


predicted = [predict(x) for x, _ in test]
accuracy = sum(p == label for p, (_, label) in zip(predicted, test)) / len(test)
print("Accuracy is {}".format(accuracy))
run_logger.log("Accuracy", accuracy)

precision = []
for name in centres:
    chosen = [label for p, (_, label) in zip(predicted, test) if p == name]
    precision.append(sum(label == name for label in chosen) / len(chosen) if chosen else 0.0)
run_logger.log("Precision", numpy.array(precision) if numpy else precision)

os.makedirs("./outputs", exist_ok=True)
with open("./outputs/model.pkl", "wb") as f:
    pickle.dump(model, f)
print("Export the model to model.pkl")
