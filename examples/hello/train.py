"""A sample experiment: prints its arguments, logs a few metrics and writes an output file.

Run it with:  mlw experiment submit -c local train.py --epochs 3
"""

import argparse
import os
import platform
import sys

from mlw import log_artifact, log_metric


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    args, extra = parser.parse_known_args()

    print(f"Python {platform.python_version()} on {platform.node()}")
    print(f"run id: {os.environ.get('MLW_RUN_ID', '(not under mlw)')}")
    print(f"arguments: {sys.argv[1:]}")

    loss = 1.0
    for epoch in range(1, args.epochs + 1):
        loss *= 0.5
        log_metric("loss", loss, step=epoch)
        print(f"epoch {epoch}: loss {loss:.4f}")

    os.makedirs("outputs", exist_ok=True)
    with open(os.path.join("outputs", "result.txt"), "w", encoding="utf-8") as out:
        out.write(f"final loss {loss}\n")
    log_metric("final_loss", loss)
    print("wrote outputs/result.txt")


if __name__ == "__main__":
    main()
