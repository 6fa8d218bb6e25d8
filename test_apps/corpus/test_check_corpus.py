#!/usr/bin/env python3
"""Unit test of check_corpus.py's verdicts (no corpus binaries needed): which reports pass a row,
which fail it and why, and how the H200 cells of docs/validation.md's table are written."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_corpus as cc  # noqa: E402

EXP = {"program": "p", "sites": [
    {"file": "a.cu", "line": 10, "kind": "launch", "ids": ["blocking-launch"], "required": True, "what": "k<<<>>>"},
    {"file": "a.cu", "line": 20, "kind": "copy", "ids": ["pageable-async-copy"], "required": False, "what": "pinned"},
    {"file": "a.cu", "line": 30, "kind": "lib", "ids": ["blocking-launch"], "required": True, "what": "gemm",
     "via": "cublasSgemm_v2"},
    {"file": "a.cu", "line": 40, "kind": "copy", "ids": ["pageable-async-copy"], "required": True, "what": "in capture",
     "captured": True},
    {"file": "a.cu", "line": 50, "kind": "launch", "ids": ["blocking-launch"], "required": True, "what": "not run",
     "run": False},
]}


def finding(line, fid="blocking-launch", via=None, user_code=True, file="/src/a.cu"):
    cs = {"file": file, "line": line, "function": "main", "user_code": user_code}
    if via is not None:
        cs["via"] = via
    return {"id": fid, "api": "cudaLaunchKernel", "count": 1, "call_site": cs}


GOOD = [finding(10), finding(30, via={"function": "cublasSgemm_v2", "module": "/x/libcublas.so.13"})]


class Evaluate(unittest.TestCase):
    def test_every_required_site_at_its_line_passes(self):
        errors, seen = cc.evaluate(EXP, GOOD, "gpu", True)
        self.assertEqual(errors, [])
        self.assertEqual(sorted(seen), [("a.cu", 10), ("a.cu", 30)])

    def test_a_missing_required_site_fails_only_when_strict(self):
        self.assertEqual(cc.evaluate(EXP, GOOD[:1], "gpu", False)[0], [])
        errors, _ = cc.evaluate(EXP, GOOD[:1], "gpu", True)
        self.assertEqual(errors, ["missing: a.cu:30 (gemm)"])

    def test_a_finding_at_another_line_fails(self):
        errors, _ = cc.evaluate(EXP, GOOD + [finding(11)], "gpu", False)
        self.assertEqual(len(errors), 1)
        self.assertIn("a.cu:11: no expected statement there", errors[0])

    def test_a_finding_without_source_line_fails(self):
        f = {"id": "blocking-launch", "api": "cuLaunchKernel", "count": 2,
             "call_site": {"function": "cusparseSpMV", "module": "/x/libcusparse.so.12", "offset": "0x10"}}
        errors, _ = cc.evaluate(EXP, GOOD + [f], "gpu", False)
        self.assertEqual(len(errors), 1)
        self.assertIn("cusparseSpMV (libcusparse.so.12+0x10)", errors[0])

    def test_wrong_id_captured_and_not_user_code_fail_on_the_gpu(self):
        bad = [finding(20, fid="blocking-memset"), finding(40, fid="pageable-async-copy"),
               finding(10, user_code=False)]
        errors, _ = cc.evaluate(EXP, GOOD + bad, "gpu", False)
        self.assertEqual(len(errors), 3, errors)
        self.assertTrue(any("expected one of pageable-async-copy" in e for e in errors))
        self.assertTrue(any("captured into a graph" in e for e in errors))
        self.assertTrue(any("not marked as the program's own code" in e for e in errors))

    def test_unchecked_ids_are_ignored(self):
        self.assertEqual(cc.evaluate(EXP, GOOD + [finding(99, fid="explicit-sync")], "gpu", True)[0], [])

    def test_via(self):
        wrong = [finding(10), finding(30, via={"function": "cublasSgemv_v2", "module": "/x/libcublas.so.13"})]
        self.assertIn("expected via cublasSgemm_v2, got cublasSgemv_v2", cc.evaluate(EXP, wrong, "gpu", False)[0][0])
        none = [finding(10), finding(30)]
        self.assertEqual(len(cc.evaluate(EXP, none, "gpu", False)[0]), 1)
        # The library had no usable symbols here (another build on the GPU machine): its module is enough.
        unnamed = [finding(10), finding(30, via={"module": "/x/libcublas.so.13", "offset": "0x1234"})]
        self.assertEqual(cc.evaluate(EXP, unnamed, "gpu", True)[0], [])

    def test_expected_causes_are_checked_on_the_gpu(self):
        exp = {"program": "p", "sites": [dict(EXP["sites"][0], causes=["graph-host-memcpy"])]}
        good = dict(finding(10), cause="graph-host-memcpy")
        bad = dict(finding(10), cause="unknown")
        self.assertEqual(cc.evaluate(exp, [good], "gpu", True)[0], [])
        errors = cc.evaluate(exp, [bad], "gpu", True)[0]
        self.assertEqual(errors, ["blocking-launch at a.cu:10: cause unknown, expected one of graph-host-memcpy"])
        self.assertEqual(cc.evaluate(exp, [bad], "probe", True)[0], [])  # the probe's synthetic calls have none

    def test_probe_mode_requires_what_the_probe_sees(self):
        exp = {"program": "p", "sites": [dict(EXP["sites"][0]), dict(EXP["sites"][1], probe=False)]}
        self.assertEqual(cc.evaluate(exp, [finding(10)], "probe", True)[0], [])
        self.assertEqual(cc.evaluate(exp, [], "probe", True)[0], ["missing: a.cu:10 (k<<<>>>)"])


class Table(unittest.TestCase):
    def test_cells_and_fill(self):
        errors, seen = cc.evaluate(EXP, GOOD[:1], "gpu", True)
        self.assertEqual(cc.gpu_cells(EXP, seen, errors), ("1 sites, 1 of 2 required", "FAIL (1 error)"))
        ok = cc.gpu_cells(EXP, *reversed(cc.evaluate(EXP, GOOD, "gpu", True)))
        self.assertEqual(ok, ("2 sites, 2 of 2 required", "pass"))
        got = cc.h200_table({("p", "O2.shared"): ok, ("p", "O0.static"): ("not run", "FAIL")},
                            {"date": "d", "gpu": "g"})
        self.assertEqual(got.split("\n"), ["<!-- check_corpus results: run of d, g -->",
                                            "| program | build | H200 sites reported | H200 verdict |",
                                            "|---|---|---|---|",
                                            "| p | O0.static | not run | FAIL |",
                                            "| p | O2.shared | 2 sites, 2 of 2 required | pass |"])

if __name__ == "__main__":
    unittest.main()
