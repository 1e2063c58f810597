"""Say what CloudFormation would refuse of a SAM template with a set of
parameter values, before it creates or changes anything: each
parameter's own constraints, and the template's Rules, evaluated on the
template as the SAM transform leaves it (the transform keeps Rules; AWS
evaluates them after it). Prints JSON: {"refused": [{"where", "message"}]}.
Run with the Python that carries cfn-lint; functions/template_rules_test.go
does.

    python sam_check.py TEMPLATE < SETS.json

SETS.json maps a name to a set of parameter values ({"bad": {"Name":
"value"}}); the answer maps each name to its refusals. One process checks
them all: importing the translator takes seconds.

cfn-lint checks the Rules' syntax, not their outcome for given values, and
no local tool evaluates them: this does, for the rule functions
CloudFormation documents (Fn::Equals, Fn::Not, Fn::And, Fn::Or,
Fn::Contains, Fn::EachMemberEquals, Fn::EachMemberIn, Ref). Patterns are
Java's in AWS and Python's here; the template's patterns use what both
read alike (classes, anchors, negative lookahead).
"""
import json
import os
import re
import sys

from cfnlint.decode import decode
from samtranslator.translator.transform import transform
from samtranslator.translator.managed_policy_translator import ManagedPolicyLoader


class BundledPolicies(ManagedPolicyLoader):
    """Managed policy ARNs from the translator's bundled list."""

    def __init__(self):
        super().__init__(None)

    def load(self):
        from samtranslator.internal.managed_policies import get_bundled_managed_policy_map

        return get_bundled_managed_policy_map("aws") or {}


def check_parameter(name, p, value):
    """The reason CloudFormation refuses value for parameter p, or None."""
    if value is None:
        return "no value and no default"
    kind = p.get("Type", "String")
    why = p.get("ConstraintDescription")
    if kind == "Number":
        try:
            n = float(value)
        except ValueError:
            return f"{value!r} is not a number"
        if "MinValue" in p and n < float(p["MinValue"]):
            return why or f"below MinValue {p['MinValue']}"
        if "MaxValue" in p and n > float(p["MaxValue"]):
            return why or f"above MaxValue {p['MaxValue']}"
    if kind == "String":
        if "MaxLength" in p and len(value) > int(p["MaxLength"]):
            return why or f"{len(value)} characters, above MaxLength {p['MaxLength']}"
        if "MinLength" in p and len(value) < int(p["MinLength"]):
            return why or f"{len(value)} characters, below MinLength {p['MinLength']}"
        if "AllowedPattern" in p and not re.fullmatch(p["AllowedPattern"], value):
            return why or f"{value!r} does not match AllowedPattern"
    if "AllowedValues" in p and value not in [str(v) for v in p["AllowedValues"]]:
        return why or f"{value!r} is not an allowed value"
    return None


def evaluate(x, params):
    """Evaluates a rule function over the parameters' values."""
    if isinstance(x, (str, int, float, bool)):
        return str(x) if not isinstance(x, bool) else str(x).lower()
    if isinstance(x, list):
        return [evaluate(e, params) for e in x]
    if not isinstance(x, dict) or len(x) != 1:
        raise ValueError(f"not a rule function: {x!r}")
    (fn, args), = x.items()
    if fn == "Ref":
        return params[args]
    if fn == "Fn::Equals":
        a, b = (evaluate(e, params) for e in args)
        return a == b
    if fn == "Fn::Not":
        return not evaluate(args[0], params)
    if fn == "Fn::And":
        return all(evaluate(e, params) for e in args)
    if fn == "Fn::Or":
        return any(evaluate(e, params) for e in args)
    if fn == "Fn::Contains":
        values, s = evaluate(args[0], params), evaluate(args[1], params)
        return s in values
    if fn == "Fn::EachMemberEquals":
        values, s = evaluate(args[0], params), evaluate(args[1], params)
        return all(v == s for v in values)
    if fn == "Fn::EachMemberIn":
        values, allowed = evaluate(args[0], params), evaluate(args[1], params)
        return all(v in allowed for v in values)
    raise ValueError(f"rule function {fn} is not one this check knows")


def check(path, given):
    """The refusals of the template at path with the parameter values given."""
    region = "us-east-1"
    template, matches = decode(path)
    if matches:
        sys.exit("\n".join(str(m) for m in matches))
    unknown = set(given) - set(template.get("Parameters", {}))
    if unknown:
        sys.exit(f"parameters the template does not declare: {sorted(unknown)}")
    for res in template.get("Resources", {}).values():
        props = res.get("Properties") or {}
        if res.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri", "."), str):
            props["CodeUri"] = "s3://bucket/code.zip"
    values = {"AWS::Region": region}
    values.update(given)
    out = transform(template, values, BundledPolicies())

    refused = []
    params = {}
    for name, p in out.get("Parameters", {}).items():
        value = given.get(name, None if "Default" not in p else str(p["Default"]))
        reason = check_parameter(name, p, value)
        if reason:
            refused.append({"where": "Parameters." + name, "message": reason})
        if p.get("Type") == "CommaDelimitedList" and value is not None:
            params[name] = [v.strip() for v in value.split(",")]
        else:
            params[name] = value
    for name, rule in out.get("Rules", {}).items():
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"], params):
            continue
        for a in rule["Assertions"]:
            if not evaluate(a["Assert"], params):
                refused.append({"where": "Rules." + name, "message": " ".join(a.get("AssertDescription", "").split())})
    return refused


def main():
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    sets = json.load(sys.stdin)
    json.dump({name: check(sys.argv[1], given or {}) for name, given in sets.items()}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
