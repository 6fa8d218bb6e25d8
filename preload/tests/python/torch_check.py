"""python_frames next to PyTorch (for the H200 run): usage: python3 torch_check.py HELPER.so

After `import torch`: a walk from the main thread; with CUDA, a walk from a backward hook of a
CUDA tensor, which PyTorch's autograd engine runs on its own device thread (a C++ thread that
enters Python through PyGILState_Ensure: the thread state python_frames reads is the one that
call made). Each walk must find its own frames at the marked lines. Exit 1 on a difference.
"""
import ctypes
import sys
import threading

try:
    import torch
except ImportError:
    print("skipped: torch is not installed")
    sys.exit(0)

lib = ctypes.CDLL(sys.argv[1])
lib.aw_walk.argtypes = [ctypes.POINTER(ctypes.c_char), ctypes.c_int, ctypes.c_int, ctypes.c_int,
                        ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
MARK = {}
with open(__file__, encoding="utf-8") as source:
    for number, text in enumerate(source, 1):
        if "# @" in text:
            MARK[text.rsplit("# @", 1)[1].strip()] = number


def frames(buf, n, used):
    out = []
    for record in buf.raw[:used.value].split(b"\x1e")[:max(n, 0)]:
        fields = record.split(b"\x1f")
        out.append((fields[1].decode(), int(fields[2])))
    return out


def walk_from_main():
    buf, end, used = ctypes.create_string_buffer(1 << 16), ctypes.c_int(), ctypes.c_int()
    n = lib.aw_walk(buf, len(buf), 64, 0, end, used)  # @main
    return frames(buf, n, used), end.value


def main():
    failed = False
    got, end = walk_from_main()
    ok = len(got) >= 2 and got[0] == ("walk_from_main", MARK["main"]) and end == 2
    print(f"{'ok' if ok else 'FAIL'} main thread after import torch {torch.__version__}: {got}", flush=True)
    failed |= not ok
    if not torch.cuda.is_available():
        print("skipped: no CUDA device, no autograd device thread")
        return 1 if failed else 0
    seen = []

    def hook(grad):
        buf, end, used = ctypes.create_string_buffer(1 << 16), ctypes.c_int(), ctypes.c_int()
        n = lib.aw_walk(buf, len(buf), 64, 0, end, used)  # @hook
        seen.append((threading.get_ident(), frames(buf, n, used), end.value))
        return grad

    x = torch.ones(4, device="cuda", requires_grad=True)
    x.register_hook(hook)
    (x * 2).sum().backward()
    torch.cuda.synchronize()
    if not seen:
        print("FAIL: the hook did not run")
        return 1
    ident, got, end = seen[0]
    ok = bool(got) and got[0] == ("main.<locals>.hook", MARK["hook"]) and end == 2
    where = "the autograd device thread" if ident != threading.get_ident() else "the main thread"
    print(f"{'ok' if ok else 'FAIL'} backward hook on {where}: {got}", flush=True)
    failed |= not ok
    return 1 if failed else 0


sys.exit(main())
