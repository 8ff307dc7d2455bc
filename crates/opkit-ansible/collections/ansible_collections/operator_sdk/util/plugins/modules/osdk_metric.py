#!/usr/bin/python
# -*- coding: utf-8 -*-
# opkit's osdk_metric: upstream operator_sdk.util.osdk_metric's interface, opkit's code.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: osdk_metric
short_description: Create or update a Prometheus metric of the operator
description:
  - The operator reads this task's result and applies it to the metric I(name) on its
    C(/metrics) endpoint (created on first use with I(description) as its help).
  - Exactly one of I(counter), I(gauge), I(histogram) or I(summary) is required. opkit does
    not support summaries yet, so a summary fails the task.
options:
  name:
    type: str
    required: true
    description: The name of the metric.
  description:
    type: str
    required: true
    description: The help text of the metric.
  counter:
    type: dict
    description: C(increment) (bool) or C(add) (a number, not negative).
  gauge:
    type: dict
    description: C(set), C(increment), C(decrement), C(set_to_current_time), C(add) or C(subtract).
  histogram:
    type: dict
    description: C(observe) (a number).
  summary:
    type: dict
    description: C(observe) (a number); not supported by opkit yet.
"""

EXAMPLES = r"""
- operator_sdk.util.osdk_metric:
    name: memcached_reconciles
    description: Reconciles of Memcached custom resources
    counter:
      increment: true
"""

RETURN = r"""
name:
  description: The name of the metric.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

COUNTER = {"increment": {"type": "bool"}, "add": {"type": "float"}}
GAUGE = {
    "set": {"type": "float"},
    "increment": {"type": "bool"},
    "decrement": {"type": "bool"},
    "set_to_current_time": {"type": "bool"},
    "add": {"type": "float"},
    "subtract": {"type": "float"},
}
OBSERVE = {"observe": {"type": "float"}}


def main():
    module = AnsibleModule(
        argument_spec={
            "name": {"type": "str", "required": True},
            "description": {"type": "str", "required": True},
            "counter": {"type": "dict", "options": COUNTER},
            "gauge": {"type": "dict", "options": GAUGE},
            "histogram": {"type": "dict", "options": OBSERVE},
            "summary": {"type": "dict", "options": OBSERVE},
        },
        supports_check_mode=True,
    )
    p = module.params
    kinds = [k for k in ("counter", "gauge", "histogram", "summary") if p[k] is not None]
    if len(kinds) != 1:
        module.fail_json(msg="exactly one of counter, gauge, histogram or summary is required, got %s" % (kinds or "none"))
    if kinds == ["summary"]:
        module.fail_json(msg="osdk_metric: summary metrics are not supported by opkit yet (use a histogram)")
    if p["counter"] and (p["counter"].get("add") or 0) < 0:
        module.fail_json(msg="counter metrics cannot decrease in value")
    result = {"name": p["name"], "description": p["description"]}
    result[kinds[0]] = {k: v for k, v in p[kinds[0]].items() if v is not None}
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
