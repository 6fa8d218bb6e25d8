"""Target of short_sync_test.py: `loss.item()` every step of a small loop, each
wait far below --min-blocked-us. `python short_sync_app.py STEPS KERNEL_MS`."""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor", "site-packages"))
import fakeframework  # noqa: E402


def train(cuda, steps, ms):
    total = 0
    for _ in range(steps):
        cuda.sleep_kernel(ms)
        total += cuda.value()  # LINE:item
    return total


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    ms = float(sys.argv[2]) if len(sys.argv) > 2 else 0.01
    cuda = fakeframework.Cuda()
    train(cuda, steps, ms)
    print("short_sync_app: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
