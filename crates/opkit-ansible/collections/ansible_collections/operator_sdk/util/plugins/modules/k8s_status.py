#!/usr/bin/python
# -*- coding: utf-8 -*-
# opkit's k8s_status: upstream operator_sdk.util.k8s_status's interface, opkit's code.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_status
short_description: Set custom status keys and conditions on a Kubernetes resource
description:
  - Writes the C(status) subresource of the resource named by I(api_version), I(kind),
    I(name) and I(namespace); meant for the custom resource an operator reconciles.
  - Without I(force), the given keys are merged into the stored status and the given
    conditions are merged into C(status.conditions) by C(type); nothing is written when
    the stored status already holds them.
options:
  api_version: {type: str, default: v1, aliases: [api, version], description: The resource's apiVersion.}
  kind: {type: str, required: true, description: The resource's kind.}
  name: {type: str, required: true, description: The resource's name.}
  namespace: {type: str, description: The resource's namespace.}
  status: {type: dict, description: "Keys set on the status (one of I(status) or I(conditions) is required)."}
  conditions:
    type: list
    elements: dict
    description:
      - Conditions set on C(status.conditions) (C(type) and C(status) required; C(status) one of
        C(True), C(False), C(Unknown); C(reason) one CamelCase word; C(message);
        C(lastHeartbeatTime) and C(lastTransitionTime) RFC 3339).
  force: {type: bool, default: false, description: Replace the whole status instead of merging.}
  kubeconfig: {type: path, description: "Kubeconfig file (default: K8S_AUTH_KUBECONFIG).", }
  context: {type: str, description: Kubeconfig context.}
  host: {type: str, description: API server URL.}
  api_key: {type: str, description: Bearer token.}
  validate_certs: {type: bool, aliases: [verify_ssl], description: Verify the server's certificate.}
  ca_cert: {type: path, aliases: [ssl_ca_cert], description: CA bundle.}
  client_cert: {type: path, aliases: [cert_file], description: Client certificate.}
  client_key: {type: path, aliases: [key_file], description: Client key.}
  proxy: {type: str, description: HTTP proxy URL.}
"""

EXAMPLES = r"""
- name: Report the pods of a Memcached
  operator_sdk.util.k8s_status:
    api_version: cache.example.com/v1alpha1
    kind: Memcached
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      nodes: ["a", "b"]
    conditions:
      - type: Available
        status: "True"
        reason: Ready
        message: every replica is up
"""

RETURN = r"""
result:
  description: The resource after the write (or as stored when nothing changed).
  returned: success
  type: dict
"""

import copy
import datetime
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.operator_sdk.util.plugins.module_utils.opkit_k8s import (
    AUTH_ARG_SPEC,
    NAME_ARG_SPEC,
    api_error,
    dynamic_client,
)

CONDITION_KEYS = ("type", "status", "reason", "message", "lastHeartbeatTime", "lastTransitionTime")
CAMEL_CASE = re.compile(r"^(?:[A-Z]*[a-z]*)+$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?(\.\d+)?(([+-]\d\d:\d\d)|Z)$")


def check_condition(condition):
    """A condition as the API conventions want it, or the reason it is not."""
    if not isinstance(condition, dict):
        return None, "`conditions` must be a list of objects"
    condition = dict(condition)
    if isinstance(condition.get("status"), bool):
        condition["status"] = "True" if condition["status"] else "False"
    for key in condition:
        if key not in CONDITION_KEYS:
            return None, "%s is not a valid field for a condition, accepted fields are %s" % (key, list(CONDITION_KEYS))
    for key in ("type", "status"):
        if not condition.get(key):
            return None, "Condition `%s` must be set" % key
    if condition["status"] not in ("True", "False", "Unknown"):
        return None, 'Condition `status` must be one of ["True", "False", "Unknown"], not %s' % condition["status"]
    if condition.get("reason") and not CAMEL_CASE.match(condition["reason"]):
        return None, "Condition `reason` must be a single, CamelCase word"
    for key in ("lastHeartbeatTime", "lastTransitionTime"):
        if condition.get(key) and not RFC3339.match(condition[key]):
            return None, "`%s` must be a RFC3339 compliant datetime string" % key
    return condition, None


def contains(stored, wanted):
    """Whether `stored` already holds everything of `wanted` (lists: every item present)."""
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(contains(stored.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(stored, list) and all(item in stored for item in wanted)
    return stored == wanted


def without_transition_times(status):
    status = copy.deepcopy(status)
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict):
            condition.pop("lastTransitionTime", None)
    return status


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_conditions(old, new):
    """`old` with each of `new` put in place of the condition of its type (appended when
    new); a condition keeps its lastTransitionTime unless its status flips."""
    merged = [copy.deepcopy(c) for c in old if isinstance(c, dict)]
    for condition in new:
        index = next((i for i, c in enumerate(merged) if c.get("type") == condition["type"]), None)
        condition = dict(condition)
        if "lastTransitionTime" not in condition:
            previous = merged[index] if index is not None else {}
            if previous.get("status") == condition["status"] and previous.get("lastTransitionTime"):
                condition["lastTransitionTime"] = previous["lastTransitionTime"]
            else:
                condition["lastTransitionTime"] = now()
        if index is None:
            merged.append(condition)
        else:
            merged[index] = condition
    return merged


def main():
    spec = dict(AUTH_ARG_SPEC)
    spec.update(NAME_ARG_SPEC)
    spec.update(
        status={"type": "dict"},
        conditions={"type": "list", "elements": "raw"},
        force={"type": "bool", "default": False},
    )
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    p = module.params
    status = copy.deepcopy(p["status"] or {})
    conditions = []
    for raw in p["conditions"] or []:
        condition, error = check_condition(raw)
        if error:
            module.fail_json(msg=error)
        conditions.append(condition)
    if conditions and status.get("conditions"):
        module.fail_json(msg="You cannot specify conditions in both the `status` and `conditions` parameters")
    if not status and not conditions:
        module.fail_json(msg="one of `status` or `conditions` is required")

    client = dynamic_client(module)
    try:
        resource = client.resources.get(api_version=p["api_version"], kind=p["kind"])
    except Exception as exc:
        module.fail_json(msg="cannot find %s %s: %s" % (p["api_version"], p["kind"], exc))
    if "status" not in resource.subresources:
        module.fail_json(msg="Resource %s.%s does not support the status subresource" % (p["api_version"], p["kind"]))
    try:
        instance = client.get(resource, name=p["name"], namespace=p["namespace"]).to_dict()
    except Exception as exc:
        module.fail_json(msg="Failed to retrieve requested object: %s" % api_error(exc))
    stored = instance.get("status") or {}

    if p["force"]:
        if conditions:
            status["conditions"] = conditions
        if status == stored:
            module.exit_json(changed=False, result=instance)
        if module.check_mode:
            module.exit_json(changed=True, result=instance)
        instance["status"] = status
        try:
            result = client.replace(resource.status, body=instance, name=p["name"], namespace=p["namespace"])
        except Exception as exc:
            module.fail_json(msg="Failed to replace status: %s" % api_error(exc))
        module.exit_json(changed=True, result=result.to_dict())

    wanted = dict(status)
    if conditions:
        wanted["conditions"] = conditions
    if contains(without_transition_times(stored), without_transition_times(wanted)):
        module.exit_json(changed=False, result=instance)
    if conditions or status.get("conditions"):
        status["conditions"] = merge_conditions(stored.get("conditions") or [], conditions or status["conditions"])
    if module.check_mode:
        module.exit_json(changed=True, result=instance)
    try:
        result = client.patch(
            resource.status,
            body={"status": status},
            name=p["name"],
            namespace=p["namespace"],
            content_type="application/merge-patch+json",
        )
    except Exception as exc:
        module.fail_json(msg="Failed to update status: %s" % api_error(exc))
    module.exit_json(changed=True, result=result.to_dict())


if __name__ == "__main__":
    main()
