"""The parts of SARIF 2.1.0 (OASIS, sarif-v2.1.0-os, section 3) that asyncwatch writes and GitHub
code scanning reads, as a JSON Schema written here from the specification (the official schema
file is not in the repository): required properties, types, enums and value ranges.
GitHub's own additions (docs.github.com, "SARIF support for code scanning") are checked in
check_for_github(): a location for every result, partialFingerprints, rule help."""

_message = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
_artifact_location = {
    "type": "object", "required": ["uri"],
    "properties": {"uri": {"type": "string", "format": "uri-reference", "minLength": 1},
                   "uriBaseId": {"type": "string"}},
}
_region = {"type": "object", "properties": {"startLine": {"type": "integer", "minimum": 1},
                                             "endLine": {"type": "integer", "minimum": 1},
                                             "startColumn": {"type": "integer", "minimum": 1}}}
_location = {
    "type": "object",
    "properties": {
        "physicalLocation": {"type": "object", "required": ["artifactLocation"],
                             "properties": {"artifactLocation": _artifact_location, "region": _region}},
        "logicalLocations": {"type": "array", "items": {"type": "object", "properties": {
            "fullyQualifiedName": {"type": "string"}, "kind": {"type": "string"}}}},
        "message": _message,
    },
}
_level = {"enum": ["none", "note", "warning", "error"]}
_rule = {
    "type": "object", "required": ["id"],
    "properties": {
        "id": {"type": "string", "minLength": 1}, "name": {"type": "string"},
        "shortDescription": _message, "fullDescription": _message,
        "help": {"type": "object", "required": ["text"],
                 "properties": {"text": {"type": "string"}, "markdown": {"type": "string"}}},
        "defaultConfiguration": {"type": "object", "properties": {"level": _level}},
    },
}
_result = {
    "type": "object", "required": ["message"],
    "properties": {
        "ruleId": {"type": "string"}, "ruleIndex": {"type": "integer", "minimum": -1}, "level": _level,
        "message": _message, "locations": {"type": "array", "items": _location},
        "partialFingerprints": {"type": "object", "additionalProperties": {"type": "string"}},
        "baselineState": {"enum": ["new", "unchanged", "updated", "absent"]},
        "properties": {"type": "object"},
    },
}
SCHEMA = {
    "type": "object", "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string"},
        "version": {"const": "2.1.0"},
        "runs": {"type": "array", "items": {
            "type": "object", "required": ["tool"],
            "properties": {
                "tool": {"type": "object", "required": ["driver"], "properties": {"driver": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                                   "rules": {"type": "array", "items": _rule}}}}},
                "originalUriBaseIds": {"type": "object", "additionalProperties": _artifact_location},
                "invocations": {"type": "array", "items": {
                    "type": "object", "required": ["executionSuccessful"],
                    "properties": {"executionSuccessful": {"type": "boolean"},
                                   "toolExecutionNotifications": {"type": "array", "items": {
                                       "type": "object", "required": ["message"],
                                       "properties": {"message": _message, "level": _level,
                                                      "locations": {"type": "array", "items": _location}}}}}}},
                "results": {"type": "array", "items": _result},
            },
        }},
    },
}


def check(doc):
    """Raises on a violation of SCHEMA or of GitHub's requirements."""
    import jsonschema
    jsonschema.validate(doc, SCHEMA)
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
            base = phys["artifactLocation"].get("uriBaseId")
            assert base is None or base in bases, f"uriBaseId {base} not in originalUriBaseIds"
            fp = res.get("partialFingerprints", {})
            assert fp and all(fp.values()), "result without partialFingerprints"
            if "ruleIndex" in res:
                assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
