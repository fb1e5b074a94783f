"""Validate HAR documents against tests/har/har-1.2.schema.json with jsonschema.

Usage: check.py SCHEMA HAR... ; prints one line per document (its entries), and every
violation (at most 20 per document) with its JSON path; exits 1 when a document is invalid.
"""

import json
import sys

import jsonschema


def main() -> int:
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    bad = 0
    for path in sys.argv[2:]:
        doc = json.load(open(path, encoding="utf-8"))
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        print(f"{path}: {len(doc['log']['entries'])} entries, {len(errors)} violations")
        for e in errors[:20]:
            where = "/".join(str(p) for p in e.absolute_path)
            print(f"  /{where}: {e.message}")
        bad += bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
