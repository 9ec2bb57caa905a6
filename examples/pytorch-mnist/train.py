"""Train a small MNIST classifier with PyTorch.

Uses the GPU when there is one and says which device it uses. Reads MNIST from ./data/MNIST
(torchvision layout) when it is there; otherwise trains on a small synthetic set, so nothing
needs to be downloaded. Without PyTorch it falls back to a pure-Python model.

Run it with:  mlw experiment submit -c local train.py --epochs 2
"""

import argparse
import os
import sys

from mlw import log_metric


def parse_args():
    parser = argparse.ArgumentParser(description="MNIST with PyTorch")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--data", default="data")
    return parser.parse_args()


def report(epoch, loss, accuracy):
    print(f"epoch {epoch}: loss {loss:.4f} accuracy {accuracy:.4f}", flush=True)
    log_metric("loss", loss, step=epoch)
    log_metric("accuracy", accuracy, step=epoch)


def train_without_torch(args):
    from mlw.synthetic import make_digits, train_softmax

    print("PyTorch is not installed: training a pure-Python model on synthetic digits")
    print("device: cpu (pure Python)")
    data = make_digits(600, seed=1)
    accuracy = train_softmax(data[:500], data[500:], args.epochs, on_epoch=report)
    log_metric("final_accuracy", accuracy)


def load_data(torch, args):
    try:
        from torchvision import datasets, transforms

        root = args.data
        if os.path.isdir(os.path.join(root, "MNIST")):
            tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
            train = datasets.MNIST(root, train=True, download=False, transform=tf)
            test = datasets.MNIST(root, train=False, download=False, transform=tf)
            print(f"data: MNIST from {root}")
            return train, test
    except Exception as error:  # torchvision missing or data unreadable
        print(f"MNIST not used ({error})")
    generator = torch.Generator().manual_seed(0)
    prototypes = torch.rand(10, 1, 28, 28, generator=generator)
    labels = torch.randint(0, 10, (6000,), generator=generator)
    images = prototypes[labels] + 0.3 * torch.randn(6000, 1, 28, 28, generator=generator)
    dataset = torch.utils.data.TensorDataset(images, labels)
    print("data: synthetic digits (put MNIST in ./data/MNIST to use it)")
    return torch.utils.data.random_split(dataset, [5000, 1000], generator=generator)


def train_with_torch(torch, args):
    import torch.nn as nn
    import torch.nn.functional as F

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU"
    print(f"device: {device} ({name}), torch {torch.__version__}", flush=True)

    train_set, test_set = load_data(torch, args)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=1000)

    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        model.train()
        total = 0.0
        for images, labels in train_loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(labels)
        model.eval()
        correct = 0
        with torch.no_grad():
            for images, labels in test_loader:
                predicted = model(images.to(device)).argmax(dim=1)
                correct += (predicted == labels.to(device)).sum().item()
        accuracy = correct / len(test_loader.dataset)
        report(epoch, total / len(train_loader.dataset), accuracy)
    log_metric("final_accuracy", accuracy)
    os.makedirs("outputs", exist_ok=True)
    torch.save(model.state_dict(), os.path.join("outputs", "model.pt"))
    print("saved outputs/model.pt")


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        train_without_torch(args)
        return 0
    train_with_torch(torch, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
