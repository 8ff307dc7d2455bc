#!/usr/bin/python
# -*- coding: utf-8 -*-
# opkit's k8s_event: upstream operator_sdk.util.k8s_event's interface, opkit's code.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_event
short_description: Create, update or delete a Kubernetes Event
description:
  - Creates the v1 Event I(name) in I(namespace), or updates it (its C(count) grows and
    C(lastTimestamp) moves while the reason stays the same); C(state=absent) deletes it.
options:
  state: {type: str, choices: [present, absent], default: present, description: Whether the Event exists.}
  name: {type: str, required: true, description: The Event's name.}
  namespace: {type: str, required: true, description: The Event's namespace.}
  merge_type: {type: list, elements: str, choices: [json, merge, strategic-merge], description: Accepted for compatibility; updates are merge patches.}
  message: {type: str, required: true, description: What happened, for people.}
  reason: {type: str, required: true, description: Why, in one word.}
  reportingComponent: {type: str, description: The controller that emits the Event.}
  type: {type: str, choices: [Normal, Warning], description: The Event's type.}
  source: {type: dict, description: "The reporting component ({component: ...})."}
  involvedObject: {type: dict, description: "The object the Event is about (apiVersion, kind, name, namespace); its uid is filled in when it exists."}
  appendTimestamp: {type: bool, description: Append the current time to the name (a new Event each time).}
  kubeconfig: {type: path, description: "Kubeconfig file (default: K8S_AUTH_KUBECONFIG)."}
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
- operator_sdk.util.k8s_event:
    name: "{{ ansible_operator_meta.name }}-scaled"
    namespace: "{{ ansible_operator_meta.namespace }}"
    reason: Scaled
    message: "scaled to {{ size }}"
    type: Normal
    involvedObject:
      apiVersion: cache.example.com/v1alpha1
      kind: Memcached
      name: "{{ ansible_operator_meta.name }}"
      namespace: "{{ ansible_operator_meta.namespace }}"
"""

RETURN = r"""
result:
  description: The Event as stored.
  returned: success
  type: dict
"""

import datetime

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.operator_sdk.util.plugins.module_utils.opkit_k8s import (
    AUTH_ARG_SPEC,
    api_error,
    dynamic_client,
)


def main():
    spec = dict(AUTH_ARG_SPEC)
    spec.update(
        state={"default": "present", "choices": ["present", "absent"]},
        name={"required": True},
        namespace={"required": True},
        merge_type={"type": "list", "elements": "str", "choices": ["json", "merge", "strategic-merge"]},
        message={"type": "str", "required": True},
        reason={"type": "str", "required": True},
        reportingComponent={"type": "str"},
        type={"choices": ["Normal", "Warning"]},
        source={"type": "dict"},
        involvedObject={"type": "dict"},
        appendTimestamp={"type": "bool", "default": False},
    )
    module = AnsibleModule(argument_spec=spec)
    p = module.params
    from kubernetes.dynamic.exceptions import NotFoundError

    client = dynamic_client(module)
    events = client.resources.get(api_version="v1", kind="Event")
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    name = p["name"]
    if p["appendTimestamp"]:
        name = "%s.%d" % (name, int(now.timestamp() * 1e6))

    try:
        prior = client.get(events, name=name, namespace=p["namespace"]).to_dict()
    except NotFoundError:
        prior = None
    except Exception as exc:
        module.fail_json(msg="Unable to read event: %s" % api_error(exc))

    if p["state"] == "absent":
        if prior is None:
            module.exit_json(changed=False, result={})
        try:
            client.delete(events, name=name, namespace=p["namespace"])
        except Exception as exc:
            module.fail_json(msg="Unable to delete event: %s" % api_error(exc))
        module.exit_json(changed=True, result=prior)

    involved = dict(p["involvedObject"] or {})
    if involved.get("kind") and involved.get("name"):
        try:
            kind = client.resources.get(api_version=involved.get("apiVersion", "v1"), kind=involved["kind"])
            found = client.get(kind, name=involved["name"], namespace=involved.get("namespace")).to_dict()
            involved["uid"] = found["metadata"]["uid"]
            involved["resourceVersion"] = found["metadata"]["resourceVersion"]
        except Exception:
            pass  # the Event may be about an object that is gone

    same_reason = prior is not None and prior.get("reason") == p["reason"]
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": p["namespace"]},
        "message": p["message"],
        "reason": p["reason"],
        "type": p["type"] or "Normal",
        "source": p["source"] or {},
        "involvedObject": involved,
        "count": (prior.get("count") or 1) + 1 if same_reason else 1,
        "firstTimestamp": prior.get("firstTimestamp") if same_reason else stamp,
        "lastTimestamp": stamp,
    }
    if p["reportingComponent"]:
        event["reportingComponent"] = p["reportingComponent"]
    try:
        if prior is None:
            result = client.create(events, body=event, namespace=p["namespace"])
        else:
            result = client.patch(
                events,
                body=event,
                name=name,
                namespace=p["namespace"],
                content_type="application/merge-patch+json",
            )
    except Exception as exc:
        module.fail_json(msg="Unable to create event: %s" % api_error(exc))
    module.exit_json(changed=True, result=result.to_dict())


if __name__ == "__main__":
    main()
