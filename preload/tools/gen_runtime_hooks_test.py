#!/usr/bin/env python3
"""Unit tests of gen_runtime_hooks.py's reading of the toolkit's declarations and of the hook list
(ctest preload_runtime_hooks_gen): the parameter forms of cuda_runtime_api.h written as cuda_abi.h
has them, rows the list must refuse, and an older toolkit's forms. Python 3 standard library only."""
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_runtime_hooks as gen  # noqa: E402

KNOWN = {"cudaStream_t", "cudaEvent_t", "dim3", "cudaPitchedPtr", "cudaHostFn_t", "cudaMemLocation"}
HANDLES = {"cudaGraph_t": False, "cudaGraphNode_t": False, "cudaArray_const_t": True}
ENUMS = {"cudaMemcpyKind"}


def t(param):
    return gen.param_type(param, KNOWN, HANDLES, ENUMS, "test")


class ParamTypes(unittest.TestCase):
    def test_kept_and_builtin(self):
        self.assertEqual(t("cudaStream_t stream __dv(0)"), "cudaStream_t")
        self.assertEqual(t("struct cudaPitchedPtr pitchedDevPtr"), "cudaPitchedPtr")
        self.assertEqual(t("dim3 gridDim"), "dim3")
        self.assertEqual(t("unsigned int flags = cudaMemAttachSingle"), "unsigned")
        self.assertEqual(t("unsigned long long flags __dv(0)"), "unsigned long long")
        self.assertEqual(t("cudaStream_t *pStream"), "cudaStream_t*")

    def test_enum_by_value(self):
        self.assertEqual(t("enum cudaMemcpyKind kind"), "int")
        self.assertEqual(t("cudaMemcpyKind kind"), "int")

    def test_pointers_to_unknown_types(self):
        self.assertEqual(t("const struct cudaMemcpy3DParms *p"), "const void*")
        self.assertEqual(t("void *const *dsts"), "void* const*")
        self.assertEqual(t("const void *const *srcs"), "const void* const*")
        self.assertEqual(t("void **args"), "void**")

    def test_handles(self):
        self.assertEqual(t("cudaGraph_t graph"), "void*")
        self.assertEqual(t("cudaGraph_t *pGraph"), "void**")
        self.assertEqual(t("const cudaGraphNode_t *pDependencies"), "void* const*")
        self.assertEqual(t("cudaArray_const_t src"), "const void*")

    def test_unknown_struct_by_value_is_refused(self):
        with self.assertRaises(SystemExit):
            t("struct cudaMemcpy3DParms p")


class Rows(unittest.TestCase):
    def read(self, text):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "runtime_hooks.txt")
            with open(path, "w") as f:
                f.write(text)
            spec, gen.SPEC = gen.SPEC, path
            try:
                return gen.read_spec()
            finally:
                gen.SPEC = spec

    def test_row(self):
        rows = self.read("# comment\ncudaMemset  _ptds  Memset  (p, v, n)  fill_memset(rec, p, n, nullptr, aw_per_thread)\n")
        self.assertEqual(rows, [("cudaMemset", "_ptds", "Memset", ["p", "v", "n"],
                                 "fill_memset(rec, p, n, nullptr, aw_per_thread)")])

    def test_typed_parameters(self):
        rows = self.read("cudaGraphInstantiate  -  GraphOp  (void** exec, void* g)  -\n")
        self.assertEqual(rows[0][3], ["void** exec", "void* g"])

    def test_refused(self):
        for bad in ("cudaMemset _ptxx Memset (p) -\n", "cudaMemset - Memset p -\n", "cudaMemset - Memset (p\n",
                    "cudaMemset - Memset (p)\n"):
            with self.assertRaises(SystemExit, msg=bad):
                self.read(bad)

    def test_fallback_code(self):
        self.assertEqual(gen.fallback_code("-"), "nullptr")
        self.assertEqual(gen.fallback_code("fill_memory(rec, p, 0)"),
                         "([&](calls::AnyRecord& rec) { return fill_memory(rec, p, 0); })")
        self.assertEqual(gen.fallback_code("event_query(e)"), "(event_query(e))")


class OtherToolkits(unittest.TestCase):
    def test_older_forms_keep_the_table(self):
        # A toolkit that declares none of the names but cudaMemPrefetchAsync, in CUDA 12's 4-parameter
        # form: the table stays as it is (the union over the toolkits it was generated from).
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "include"))
            with open(os.path.join(d, "include", "cuda_runtime_api.h"), "w") as f:
                f.write("extern __host__ cudaError_t CUDARTAPI cudaMemPrefetchAsync(const void *devPtr, size_t count, "
                        "int dstDevice, cudaStream_t stream __dv(0));\n")
            files, _ = gen.make(d)
        with open(gen.TABLE) as f:
            self.assertEqual(files[gen.TABLE], f.read())


if __name__ == "__main__":
    unittest.main()
