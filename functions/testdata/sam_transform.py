"""Transform a SAM template into plain CloudFormation, as `sam deploy` has
AWS do it, and print it as JSON. Run with the Python that carries cfn-lint
(the SAM translator ships with it); functions/template_stack_test.go does.

    python sam_transform.py TEMPLATE [REGION]

A local CodeUri is replaced by an S3 location (what `sam deploy` uploads),
and managed policy names are resolved from the translator's own bundled
list, so nothing calls AWS.
"""
import json
import os
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


def main():
    path = sys.argv[1]
    region = sys.argv[2] if len(sys.argv) > 2 else "us-east-1"
    os.environ.setdefault("AWS_DEFAULT_REGION", region)
    template, matches = decode(path)
    if matches:
        sys.exit("\n".join(str(m) for m in matches))
    for res in template.get("Resources", {}).values():
        props = res.get("Properties") or {}
        if res.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri", "."), str):
            props["CodeUri"] = "s3://bucket/code.zip"
    out = transform(template, {"AWS::Region": region}, BundledPolicies())
    json.dump(out, sys.stdout, indent=1, sort_keys=True, default=str)


if __name__ == "__main__":
    main()
