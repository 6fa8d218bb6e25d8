"""What the PyTorch training-loop fix pairs (fix_torch_event_logging.py, fix_torch_item_interval.py)
share: their command line's variant, the model they train and the loop time they print."""
import sys
import time

import torch


def variant(argv):
    """(fixed, numeric arguments): `--fixed` first selects the fixed variant."""
    fixed = len(argv) > 1 and argv[1] == "--fixed"
    return fixed, argv[2:] if fixed else argv[1:]


def training():
    """(model, optimizer, data, target, loss function): two 2048-wide linear layers on a 512-row
    batch, seeded, on the GPU."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    data = torch.randn(512, 2048, device="cuda")
    target = torch.randn(512, 2048, device="cuda")
    return model, opt, data, target, torch.nn.MSELoss()


def print_loop_time(t0):
    """The line fix_pairs.py reads: "# loop: X ms" on stderr, since `t0` (time.perf_counter())."""
    print(f"# loop: {(time.perf_counter() - t0) * 1e3:.3f} ms", file=sys.stderr)
