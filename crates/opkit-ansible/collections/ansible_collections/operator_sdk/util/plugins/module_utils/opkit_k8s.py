# -*- coding: utf-8 -*-
# The connection shared by opkit's operator_sdk.util modules: one argument spec for the
# connection options and one way to turn them into a dynamic client.
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

AUTH_ARG_SPEC = {
    "kubeconfig": {"type": "path"},
    "context": {},
    "host": {},
    "api_key": {"no_log": True},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"]},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"]},
    "client_cert": {"type": "path", "aliases": ["cert_file"]},
    "client_key": {"type": "path", "aliases": ["key_file"]},
    "proxy": {"type": "str"},
}

NAME_ARG_SPEC = {
    "kind": {"required": True},
    "name": {"required": True},
    "namespace": {},
    "api_version": {"default": "v1", "aliases": ["api", "version"]},
}


def _param(module, name):
    value = module.params.get(name)
    if value is None:
        value = os.environ.get("K8S_AUTH_" + name.upper())
    return value


def dynamic_client(module):
    """A kubernetes DynamicClient for the module's connection options (fails the module when
    the kubernetes library is missing or the configuration cannot be loaded)."""
    try:
        from kubernetes import client, config
        from kubernetes.dynamic import DynamicClient
    except ImportError as exc:
        module.fail_json(msg="the kubernetes Python library is required: %s" % exc)
    configuration = client.Configuration()
    host = _param(module, "host")
    kubeconfig = _param(module, "kubeconfig")
    try:
        if host:
            configuration.host = host
            api_key = _param(module, "api_key")
            if api_key:
                configuration.api_key = {"authorization": "Bearer " + api_key}
        elif kubeconfig or not os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_kube_config(
                config_file=kubeconfig,
                context=_param(module, "context"),
                client_configuration=configuration,
            )
        else:
            config.load_incluster_config(client_configuration=configuration)
    except Exception as exc:  # the library raises several unrelated types here
        module.fail_json(msg="cannot load the Kubernetes configuration: %s" % exc)
    validate = module.params.get("validate_certs")
    if validate is not None:
        configuration.verify_ssl = validate
    for option, attribute in (("ca_cert", "ssl_ca_cert"), ("client_cert", "cert_file"), ("client_key", "key_file")):
        value = _param(module, option)
        if value:
            setattr(configuration, attribute, value)
    if module.params.get("proxy"):
        configuration.proxy = module.params["proxy"]
    return DynamicClient(client.ApiClient(configuration))


def api_error(exc):
    """The message of an API error: the Status' message when there is one."""
    body = getattr(exc, "body", None)
    if body:
        try:
            import json

            return json.loads(body).get("message") or str(body)
        except ValueError:
            return str(body)
    return str(exc)
