"""A sample experiment: prints its arguments, logs a few metrics and writes an output file.

Run it with:  mlw experiment submit -c local train.py --epochs 3
Sweep it:     mlw experiment sweep -c local train.py --lr 0.1,0.01,0.001 --bs 32,64
"""

import argparse
import math
import os
import platform
import sys

from mlw import log_artifact, log_metric


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate")
    parser.add_argument("--bs", type=int, default=32, help="batch size")
    args, extra = parser.parse_known_args()
    if extra:
        print(f"not options of this script (left as they are): {extra}")

    print(f"Python {platform.python_version()} on {platform.node()}")
    print(f"run id: {os.environ.get('MLW_RUN_ID', '(not under mlw)')}")
    print(f"arguments: {sys.argv[1:]}")

    # A stand-in for training: the loss falls fastest with a learning rate near 0.01, a little
    # faster with larger batches, so that a sweep over --lr and --bs has a best point.
    rate = 0.5 / (1.0 + abs(math.log10(max(args.lr, 1e-12)) + 2.0)) * (1.0 + args.bs / 512.0)
    loss = 1.0
    for epoch in range(1, args.epochs + 1):
        loss *= 1.0 - min(rate, 0.9)
        log_metric("loss", loss, step=epoch)
        print(f"epoch {epoch}: loss {loss:.4f} (lr {args.lr}, batch size {args.bs})")

    os.makedirs("outputs", exist_ok=True)
    with open(os.path.join("outputs", "result.txt"), "w", encoding="utf-8") as out:
        out.write(f"final loss {loss}\n")
    log_metric("final_loss", loss)
    print("wrote outputs/result.txt")


if __name__ == "__main__":
    main()
