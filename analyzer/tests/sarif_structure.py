"""SARIF 2.1.0 as GitHub code scanning reads it: the document is validated against the official
OASIS schema (data/sarif-schema-2.1.0.json, JSON Schema draft 4, with its "format" checks), and
GitHub's own additions (docs.github.com, "SARIF support for code scanning") are checked on top:
a location for every result, partialFingerprints, rule help."""

import json
import os

# The official schema file of SARIF 2.1.0 (errata 01, OASIS standard), as published in
# github.com/oasis-tcs/sarif-spec at sarif-2.1/schema/sarif-schema-2.1.0.json (commit e058381);
# unchanged, so that a test failure means the document is not SARIF, not that our reading of the
# specification was wrong.
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sarif-schema-2.1.0.json")


def _validator():
    import jsonschema
    with open(SCHEMA_PATH) as f:
        schema = json.load(f)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


_VALIDATOR = None


def check(doc):
    """Raises on a violation of the official schema or of GitHub's requirements."""
    global _VALIDATOR
    if _VALIDATOR is None:
        _VALIDATOR = _validator()
    errors = sorted(_VALIDATOR.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        raise AssertionError("; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]))
    for run in doc["runs"]:
        rules = run["tool"]["driver"].get("rules", [])
        bases = run.get("originalUriBaseIds", {})
        for r in rules:
            assert r["fullDescription"]["text"] != r["shortDescription"]["text"], r["id"]
            assert r["help"].get("markdown"), r["id"]
        for res in run.get("results", []):
            assert res.get("locations"), f"result without a location: {res['message']['text']}"
            phys = res["locations"][0].get("physicalLocation")
            assert phys, f"result without a physical location: {res['message']['text']}"
            # GitHub code scanning shows no result whose location lacks a region.
            assert phys.get("region", {}).get("startLine"), f"result without a region: {res['message']['text']}"
            base = phys["artifactLocation"].get("uriBaseId")
            assert base is None or base in bases, f"uriBaseId {base} not in originalUriBaseIds"
            fp = res.get("partialFingerprints", {})
            assert fp and all(fp.values()), "result without partialFingerprints"
            if "ruleIndex" in res:
                assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
