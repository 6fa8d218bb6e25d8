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


PY = {"program": "py", "language": "python", "forbid": [{"id": "implicit-sync", "what": "a pool"}], "sites": [
    {"file": "train.py", "line": 48, "ids": ["hidden-sync", "pageable-async-copy"], "required": True,
     "need": ["hidden-sync"], "required_default": True, "what": "loss.item()"},
    {"file": "train.py", "lines": [20, 33], "ids": ["blocking-launch"], "required": True, "what": "forward"},
    {"file": "train.py", "line": 105, "ids": ["blocking-launch"], "required": True, "what": "compiled model",
     "alt": [{"file": "model.py", "lines": [170, 193]}]},
    {"file": "train.py", "line": 47, "ids": ["explicit-sync"], "required": True, "what": "Stream.synchronize()"},
    {"file": "train.py", "line": 88, "ids": ["pageable-async-copy", "blocking-launch"], "required": False,
     "severity": {"pageable-async-copy": "note"}, "what": "jitted step"},
]}


def pyf(fid, line, file="/w/train.py", severity="warning", message="", user_code=True):
    return {"id": fid, "api": "cudaStreamSynchronize", "count": 3, "severity": severity, "message": message,
            "call_site": {"file": file, "line": line, "function": "f", "user_code": user_code}}


PY_GOOD = [pyf("hidden-sync", 48), pyf("blocking-launch", 21), pyf("blocking-launch", 180, "/w/model.py"),
           pyf("explicit-sync", 47, severity="note")]


class Python(unittest.TestCase):
    def test_every_site_at_its_line_passes_in_both_modes(self):
        self.assertEqual(cc.evaluate_py(PY, PY_GOOD, "all")[0], [])
        self.assertEqual(cc.evaluate_py(PY, PY_GOOD[:1], "default")[0], [])  # only loss.item() required there

    def test_a_wrong_line_fails(self):
        bad = [pyf("hidden-sync", 46)] + PY_GOOD[1:]
        errors = cc.evaluate_py(PY, bad, "default")[0]
        self.assertEqual(len(errors), 2, errors)
        self.assertIn("train.py:46: no expected statement there", errors[0])
        self.assertIn("missing: hidden-sync at train.py:48 (loss.item())", errors[1])

    def test_a_missing_required_finding_fails_only_every_call_mode_unless_default(self):
        errors = cc.evaluate_py(PY, PY_GOOD[:3], "all")[0]
        self.assertEqual(errors, ["missing: explicit-sync at train.py:47 (Stream.synchronize())"])
        self.assertEqual(cc.evaluate_py(PY, PY_GOOD[:3], "default")[0], [])
        # A finding of an id the site allows but not one it needs does not make it reported.
        errors = cc.evaluate_py(PY, [pyf("pageable-async-copy", 48)], "default")[0]
        self.assertEqual(errors, ["missing: hidden-sync at train.py:48 (loss.item())"])

    def test_ranges_and_alternative_locations(self):
        self.assertEqual(cc.py_site_of(PY, "train.py", 20), 1)
        self.assertEqual(cc.py_site_of(PY, "train.py", 34), None)
        self.assertEqual(cc.py_site_of(PY, "model.py", 193), 2)
        self.assertEqual(cc.py_site_of(PY, "model.py", 48), None)
        self.assertEqual(cc.py_site_of(PY, "train.py", None), None)

    def test_wrong_id_severity_phase_forbid_and_library_code_fail(self):
        bad = [pyf("hidden-sync", 47),  # Stream.synchronize() must be explicit-sync
               pyf("pageable-async-copy", 88),  # a warning where only a note is expected
               pyf("blocking-launch", 88, message="... (made inside JAX compilation (XLA autotuning): ...)"),
               pyf("implicit-sync", 21),
               pyf("blocking-launch", 122, "/tmp/torchinductor_u/ab/cab.py", user_code=False)]
        errors = cc.evaluate_py(PY, PY_GOOD + bad, "default")[0]
        self.assertEqual(len(errors), 5, errors)
        self.assertIn("hidden-sync at train.py:47: expected one of explicit-sync there", errors[0])
        self.assertIn("pageable-async-copy at train.py:88: a warning, expected a note there", errors[1])
        self.assertIn("made inside a framework phase but a warning, not a note", errors[2])
        self.assertIn("no implicit-sync expected in this program (a pool)", errors[3])
        self.assertIn("cab.py:122: not marked as the program's own code", errors[4])
        # Severities are a user's view: with every call flagged they are not compared.
        self.assertEqual(cc.evaluate_py(PY, PY_GOOD + bad[1:2], "all")[0], [])

    def test_a_finding_without_call_site_fails(self):
        f = {"id": "hidden-sync", "api": "cudaStreamSynchronize", "count": 1, "severity": "note", "call_site": None}
        errors = cc.evaluate_py(PY, PY_GOOD + [f], "default")[0]
        self.assertEqual(len(errors), 1)
        self.assertIn("(no call site): no expected statement there", errors[0])

    def test_a_frameworks_own_waits_without_user_line_pass(self):
        own = [dict(pyf("explicit-sync", None, "/x/site-packages/jaxlib/xla.py", user_code=False)),
               {"id": "explicit-sync", "api": "cuStreamSynchronize", "count": 1, "severity": "note", "call_site": None},
               pyf("in-flight-call", 0, "/x/site-packages/torch/x.py", user_code=False)]
        self.assertEqual(cc.evaluate_py(PY, PY_GOOD + own, "all")[0], [])
        # At a user's line they are checked as any other finding.
        self.assertEqual(len(cc.evaluate_py(PY, PY_GOOD + [pyf("in-flight-call", 48)], "all")[0]), 1)

    def test_a_frameworks_phase_note_without_user_line_passes(self):
        phase = "... (made inside XLA autotuning: the framework's one-time work, apart from its steady state, so a note)"
        note = pyf("pageable-async-copy", None, "", severity="note", message=phase, user_code=False)
        self.assertEqual(cc.evaluate_py(PY, PY_GOOD + [note], "default")[0], [])
        # Not as a warning, and not without the phase.
        self.assertEqual(len(cc.evaluate_py(PY, PY_GOOD + [dict(note, severity="warning")], "default")[0]), 2)
        self.assertEqual(len(cc.evaluate_py(PY, PY_GOOD + [dict(note, message="")], "default")[0]), 1)

    def test_reports_without_symbols_must_agree(self):
        self.assertEqual(cc.compare_nosym(PY_GOOD, list(reversed(PY_GOOD))), [])
        other = PY_GOOD[:3] + [pyf("hidden-sync", 47, severity="warning")]
        self.assertEqual(cc.compare_nosym(PY_GOOD, other),
                         ["only with symbols: explicit-sync (note) at train.py:47",
                          "only without symbols: hidden-sync (warning) at train.py:47"])

    def test_run_directory_verdicts(self):
        import json
        import shutil
        import tempfile
        d = tempfile.mkdtemp(prefix="aw-test-pycorpus-")
        try:
            def write(name, text):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            write("rc", "0\n")
            write("bare.rc", "0\n")
            for name in ("default", "all", "nosym"):
                write(f"report.{name}.json", json.dumps({"findings": PY_GOOD}))
            verdict, errors, seen = cc.check_py_run(PY, d, None)
            self.assertEqual((verdict, errors), ("pass", []))
            self.assertEqual(sorted(seen), [0, 1, 2, 3])
            write("bare.rc", "1\n")
            write("report.nosym.json", json.dumps({"findings": PY_GOOD[:3]}))
            verdict, errors, _ = cc.check_py_run(PY, d, None)
            self.assertEqual(verdict, "FAIL")
            self.assertEqual(errors, ["exit status 0 traced, 1 bare",
                                      "(without symbols) only with symbols: explicit-sync (note) at train.py:47"])
            os.unlink(os.path.join(d, "report.all.json"))
            self.assertIn("no report.all.json (give --build to make it from the traces)", cc.check_py_run(PY, d, None)[1])
            write("skipped", "no module cupy on the GPU machine\n")
            self.assertEqual(cc.check_py_run(PY, d, None)[:2], ("SKIP", ["no module cupy on the GPU machine"]))
        finally:
            shutil.rmtree(d)


class PythonExpectationFiles(unittest.TestCase):
    def test_every_python_expectation_is_well_formed(self):
        exps = cc.load([], "python")
        self.assertGreaterEqual(len(exps), 7)
        for e in exps:
            for key in ("program", "origin", "files", "script", "args", "env", "needs", "sites", "note"):
                self.assertIn(key, e, e["program"])
            self.assertIn(e["script"], e["files"], e["program"])
            self.assertEqual(len(e["origin"]["commit"]), 40, e["program"])
            for s in e["sites"]:
                self.assertTrue(("line" in s) != ("lines" in s), (e["program"], s))
                self.assertTrue(set(s.get("need", [])) <= set(s["ids"]), (e["program"], s))
                self.assertTrue(set(s.get("severity", {})) <= set(s["ids"]), (e["program"], s))
                self.assertIn(s["file"], [os.path.basename(f) for f in e["files"]], (e["program"], s))
                for loc in s.get("alt", []):
                    self.assertIn(loc["file"], [os.path.basename(f) for f in e["files"]], (e["program"], loc))
        self.assertEqual([e for e in cc.load([]) if e.get("language")], [])  # the C++ rows never see them


if __name__ == "__main__":
    unittest.main()
