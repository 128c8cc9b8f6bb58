#!/usr/bin/python3
"""Validates a JSON file against a JSON Schema (Debian's python3-jsonschema): validate_json.py SCHEMA FILE."""
import json
import sys

import jsonschema

schema_path, doc_path = sys.argv[1], sys.argv[2]
with open(schema_path) as f:
    schema = json.load(f)
with open(doc_path) as f:
    doc = json.load(f)
validator = jsonschema.Draft202012Validator(schema)
errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
for e in errors:
    print(f"{doc_path}: {'/'.join(map(str, e.path)) or '(root)'}: {e.message}")
if errors:
    sys.exit(1)
print(f"{doc_path}: valid against {schema.get('$id', schema_path)}")
