#!/usr/bin/env python3
"""Runs one public Python program of the corpus with its data download replaced (the GPU machine
has no network): `python3 pyshim.py SHIM SCRIPT [ARGS...]`, in the program's directory.

SHIM is one of the names below (the expectation file's "shim"). Each substitutes random data of the
shapes and types the real data set has, or the plotting a headless machine lacks, then runs SCRIPT
unchanged with runpy as `__main__` (its own file name and lines, so the call sites are the script's;
this file's frames are outermost and never hold a CUDA call). Sizes: AW_SHIM_TRAIN, AW_SHIM_TEST
(samples; defaults per shim below). Python 3 standard library, plus what the program itself imports.
"""
import os
import runpy
import sys
import types


def _sizes(train, test):
    return int(os.environ.get("AW_SHIM_TRAIN", train)), int(os.environ.get("AW_SHIM_TEST", test))


def torchvision_mnist():
    """pytorch/examples mnist/main.py: torchvision.datasets.MNIST(download=True) becomes random
    1x28x28 float tensors, normalized as the script's transform would, with int labels 0-9.
    torchvision itself is optional: stand-in modules when it is not installed."""
    import torch

    n_train, n_test = _sizes(1280, 2000)

    class FakeMNIST(torch.utils.data.Dataset):
        def __init__(self, root, train=True, download=False, transform=None, **_kw):
            g = torch.Generator().manual_seed(1 if train else 2)
            n = n_train if train else n_test
            self.data = torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8, generator=g)
            self.targets = torch.randint(0, 10, (n,), generator=g)

        def __len__(self):
            return len(self.data)

        def __getitem__(self, i):
            x = (self.data[i].float().div(255).sub(0.1307).div(0.3081)).unsqueeze(0)
            return x, int(self.targets[i])

    try:
        import torchvision.datasets as datasets
    except ImportError:
        tv = types.ModuleType("torchvision")
        datasets = types.ModuleType("torchvision.datasets")
        transforms = types.ModuleType("torchvision.transforms")

        class _Identity:
            def __init__(self, *a, **k):
                pass

            def __call__(self, x):
                return x

        transforms.Compose = transforms.ToTensor = transforms.Normalize = _Identity
        tv.datasets, tv.transforms = datasets, transforms
        sys.modules.update({"torchvision": tv, "torchvision.datasets": datasets,
                            "torchvision.transforms": transforms})
    datasets.MNIST = FakeMNIST


def jax_mnist():
    """jax examples/mnist_classifier_fromscratch.py: examples.datasets.mnist() (a download) becomes
    random float32 images (N, 784) in [0, 1] and one-hot float32 labels (N, 10), as it returns."""
    import numpy as np
    from examples import datasets

    n_train, n_test = _sizes(6016, 1024)

    def mnist(permute_train=False):
        rng = np.random.RandomState(0)

        def part(n):
            labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, n)]
            return rng.rand(n, 784).astype(np.float32), labels

        (a, b), (c, d) = part(n_train), part(n_test)
        return a, b, c, d

    datasets.mnist = mnist


def triton_plots():
    """triton tutorials: perf_report's run() plots with matplotlib and tabulates with pandas; where
    either is missing, run() calls the benchmarked function for every point and prints the figures
    instead (the same calls at the same lines of the script, no plot)."""
    try:
        import matplotlib  # noqa: F401
        import pandas  # noqa: F401
        return
    except ImportError:
        pass
    import triton.testing

    def run(self, show_plots=False, print_data=False, save_path="", **kwargs):
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        for bench in benches:
            for x in bench.x_vals:
                point = {name: x for name in bench.x_names}
                row = []
                for line in bench.line_vals:
                    row.append(self.fn(**point, **{bench.line_arg: line}, **bench.args, **kwargs))
                if print_data:
                    print(bench.plot_name, x, row)

    triton.testing.Mark.run = run


SHIMS = {"torchvision-mnist": torchvision_mnist, "jax-mnist": jax_mnist, "triton-plots": triton_plots}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in SHIMS:
        print(f"usage: pyshim.py {{{','.join(sorted(SHIMS))}}} SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    shim, script = sys.argv[1], os.path.abspath(sys.argv[2])
    sys.argv = [script] + sys.argv[3:]
    sys.path.insert(0, os.path.dirname(script))  # as `python3 SCRIPT` would have it
    SHIMS[shim]()
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
