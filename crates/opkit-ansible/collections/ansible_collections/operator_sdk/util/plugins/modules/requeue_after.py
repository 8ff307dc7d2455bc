#!/usr/bin/python
# -*- coding: utf-8 -*-
# opkit's requeue_after: upstream operator_sdk.util.requeue_after's interface, opkit's code.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: requeue_after
short_description: Reconcile the custom resource again after a period
description:
  - The operator reads the period from this task's result and reconciles the custom
    resource again after it (over the entry's reconcilePeriod for this run).
options:
  time:
    type: str
    required: true
    description: A Go duration such as C(30s), C(5m), C(1h30m) or C(1.5h).
"""

EXAMPLES = r"""
- operator_sdk.util.requeue_after:
    time: 30s
"""

RETURN = r"""
period:
  description: The period, as given.
  returned: success
  type: str
"""

import re

from ansible.module_utils.basic import AnsibleModule

GO_DURATION = re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def main():
    module = AnsibleModule(argument_spec={"time": {"type": "str", "required": True}}, supports_check_mode=True)
    if not GO_DURATION.match(module.params["time"]):
        module.fail_json(msg="invalid time input %r: expected a duration such as 30s, 5m or 1h30m" % module.params["time"])
    module.exit_json(changed=False, period=module.params["time"])


if __name__ == "__main__":
    main()
